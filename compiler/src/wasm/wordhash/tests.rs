use super::*;
use proptest::prelude::*;

use crate::cues::naive_keyword_matches as reference;

fn scan(keywords: &[String], text: &[u8]) -> Vec<bool> {
    let ids: Vec<u32> = (0..keywords.len() as u32).collect();
    let mut found = vec![false; keywords.len()];
    let (table, left_out) = WordTable::new(keywords, &ids);
    assert!(left_out.is_empty());
    table.scan(keywords, text, &mut found);
    found
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn bounded_keywords_and_last_words() {
    assert!(is_word_bounded(b"led to"));
    assert!(is_word_bounded("café".as_bytes()));
    assert!(!is_word_bounded(b"(error)"));
    assert!(!is_word_bounded(b"c++"));
    assert!(fits(b"a b c"));
    assert!(!fits(b"a b c d"));
    assert!(fits(b"x, y"));
    assert!(!fits(b"x,"));
    assert_eq!(word_count(b"a b, c"), 3);
    assert_eq!(word_count("café au".as_bytes()), 2);
}

#[test]
fn finds_phrases_overlaps_and_boundaries() {
    let kws = strings(&[
        "step", "step 12", "12", "error", "led to", "a", "to", "x-ray",
    ]);
    let text = b"At STEP  12: errors, led\tto a X-Ray";
    assert_eq!(scan(&kws, text), reference(&kws, text));
    assert_eq!(
        scan(&kws, text),
        vec![true, true, true, false, true, true, true, true]
    );
    // "caf" is not a word of "café"; the whole word is.
    let kws = strings(&["caf", "café", "é"]);
    assert_eq!(scan(&kws, "un café".as_bytes()), vec![false, true, false]);
}

#[test]
fn words_with_the_same_hash_share_a_slot_and_are_told_apart() {
    // A real FNV-1a collision (found by enumerating five-letter words).
    assert_eq!(hash_word(b"glbvs"), hash_word(b"yacxa"));
    let kws = strings(&["glbvs", "yacxa", "go glbvs", "go yacxa", "other"]);
    let ids: Vec<u32> = (0..kws.len() as u32).collect();
    let (table, _) = WordTable::new(&kws, &ids);
    assert_eq!(table.depth, 2);
    assert_eq!(table.candidates(hash_word(b"yacxa")), &[0, 1]);
    for text in [
        "glbvs",
        "yacxa",
        "go yacxa",
        "ego glbvs",
        "glbvsyacxa",
        "x go glbvs",
    ] {
        assert_eq!(
            scan(&kws, text.as_bytes()),
            reference(&kws, text.as_bytes()),
            "{text}"
        );
    }
    // Many keywords: every one is found alone, and nothing else.
    let words: Vec<String> = (0..3000).map(|i| format!("w{i}")).collect();
    let ids: Vec<u32> = (0..words.len() as u32).collect();
    let (table, _) = WordTable::new(&words, &ids);
    for (i, w) in words.iter().enumerate().step_by(97) {
        let mut found = vec![false; words.len()];
        table.scan(&words, format!("x {w} y").as_bytes(), &mut found);
        let hits: Vec<usize> = (0..found.len()).filter(|&k| found[k]).collect();
        assert_eq!(hits, vec![i]);
    }
}

proptest! {
    #[test]
    fn agrees_with_the_definition(
        kws in prop::collection::btree_set("[ab_é.]{1,3}( [ab.]{1,2}){0,4}", 1..8),
        text in prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'A', b' ', b'\t', b'_', b'.', 0xc3, 0xa9]), 0..40),
    ) {
        let kws: Vec<String> = kws
            .into_iter()
            .map(|k| cues::normalize_keyword(&k))
            .filter(|k| fits(k.as_bytes()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        prop_assume!(!kws.is_empty());
        prop_assert_eq!(scan(&kws, &text), reference(&kws, &text));
    }

    /// Keywords beginning with `a` or `b` in texts where most words
    /// begin with `c` or `d`: most words are dead and passed over.
    #[test]
    fn dead_words_change_nothing(
        kws in prop::collection::btree_set("[ab][a-d]{0,2}([ .-][a-d]{1,2}){0,2}", 1..6),
        words in prop::collection::vec(("[a-dA-D]{1,4}", prop::sample::select(vec![" ", "  ", ".", "-", " - ", "\n"])), 0..16),
    ) {
        let kws: Vec<String> = kws.into_iter().map(|k| cues::normalize_keyword(&k)).collect();
        let kws: Vec<String> = kws.into_iter().collect::<std::collections::BTreeSet<_>>().into_iter().collect();
        let text: String = words.into_iter().map(|(w, sep)| w + sep).collect();
        let ids: Vec<u32> = (0..kws.len() as u32).collect();
        let (table, _) = WordTable::new(&kws, &ids);
        prop_assert!(table.skip_dead_words);
        prop_assert_eq!(scan(&kws, text.as_bytes()), reference(&kws, text.as_bytes()), "{:?} in {:?}", kws, text);
    }
}
