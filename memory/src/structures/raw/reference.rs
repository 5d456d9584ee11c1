//! The reference for R's ranking: a tantivy index of the same windows,
//! searched as R searched before it kept its own postings (a disjunction of
//! the question's terms, tantivy's BM25, top k). The tests check that
//! [`super::bm25`] ranks as tantivy does.

use super::{window_text, Raw};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query as TantivyQuery, TermQuery};
use tantivy::schema::{IndexRecordOption, Schema, TextFieldIndexing, TextOptions, Value, STORED};
use tantivy::{Index, TantivyDocument, Term};

impl Raw {
    /// (window, tantivy's BM25 score), best first, for the question's terms.
    pub(crate) fn search_with_tantivy(
        &self,
        query: &crate::structures::Query,
    ) -> Vec<(usize, f32)> {
        let mut b = Schema::builder();
        let indexing = TextFieldIndexing::default()
            .set_tokenizer("default")
            .set_index_option(IndexRecordOption::WithFreqs);
        let body = b.add_text_field(
            "body",
            TextOptions::default().set_indexing_options(indexing),
        );
        let win = b.add_u64_field("win", STORED);
        let index = Index::create_in_ram(b.build());
        let mut writer = index
            .writer_with_num_threads(1, 15_000_000)
            .expect("writer");
        for (i, w) in self.windows.iter().enumerate() {
            let mut doc = TantivyDocument::default();
            doc.add_text(body, window_text(&self.steps, w.start, w.end));
            doc.add_u64(win, i as u64);
            writer.add_document(doc).expect("add");
        }
        writer.commit().expect("commit");
        let searcher = index.reader().expect("reader").searcher();
        let clauses: Vec<(Occur, Box<dyn TantivyQuery>)> = Raw::terms(query)
            .into_iter()
            .map(|w| {
                let q = TermQuery::new(
                    Term::from_field_text(body, &w),
                    IndexRecordOption::WithFreqs,
                );
                (Occur::Should, Box::new(q) as Box<dyn TantivyQuery>)
            })
            .collect();
        if clauses.is_empty() {
            return Vec::new();
        }
        let top = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(self.top_k),
            )
            .expect("search");
        top.into_iter()
            .filter(|(s, _)| *s > 0.0)
            .map(|(s, addr)| {
                let doc: TantivyDocument = searcher.doc(addr).expect("doc");
                let i = doc.get_first(win).and_then(|v| v.as_u64()).expect("win");
                (i as usize, s)
            })
            .collect()
    }
}
