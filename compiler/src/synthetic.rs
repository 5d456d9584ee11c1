//! Generated policies and queries of a given size, for benchmarks and
//! size measurements (not part of the stable API).

/// A policy with `sets` keyword sets of `per_set` keywords, `patterns`
/// patterns and `rules` rules that use them in turn.
pub fn policy(sets: usize, per_set: usize, patterns: usize, rules: usize) -> String {
    let mut s = String::from("policy \"bench\"\nuse std\n");
    for i in 0..sets {
        let words: Vec<String> = (0..per_set).map(|j| format!("\"kw{i}x{j}\"")).collect();
        s.push_str(&format!("let set{i} = words [{}]\n", words.join(", ")));
    }
    for i in 0..patterns {
        s.push_str(&format!("let pat{i} = pattern r\"\\bstep{i}\\s+\\d+\"\n"));
    }
    let masks = ["{S, T}", "{G}", "{V}", "{R}", "{S, T, R}"];
    for i in 0..rules {
        let cond = match i % 4 {
            0 if sets > 0 => format!("query has set{}", i % sets),
            1 if patterns > 0 => format!("query matches pat{}", i % patterns),
            2 => format!("domain is d{i} and preview.R.tokens > {}", i * 10),
            _ => format!("hits(query, set{}) >= 2 or size > 3", i % sets.max(1)),
        };
        let action = ["add", "remove", "add", "select"][i % 4];
        s.push_str(&format!(
            "rule r{i} when {cond} -> {action} {}\n",
            masks[i % masks.len()]
        ));
    }
    s.push_str("default {S, T, V}\n");
    s
}

/// A query of `len` bytes with a few keywords from the policy in it.
pub fn query(len: usize) -> String {
    let mut q =
        String::from("Why did the agent fail at step3 12 after kw7x3 and kw19x24 were seen; ");
    let filler = "the agent opened the file and then looked at the table before it moved on ";
    while q.len() < len {
        q.push_str(filler);
    }
    q.truncate(len);
    q
}
