//! Embeddings: the request body and reading the reply's JSON.

use serde_json::{json, Value};

use crate::chat::kind;
use crate::error::excerpt;
use crate::Error;

/// The JSON body of an embeddings request.
pub(crate) fn request_body<S: AsRef<str>>(model: &str, texts: &[S]) -> Value {
    let input: Vec<&str> = texts.iter().map(AsRef::as_ref).collect();
    json!({ "model": model, "input": input })
}

/// A problem with one field of a reply: the field's path and what is wrong.
type FieldProblem = (String, String);

/// Reads an embeddings reply body for `expected` inputs: one vector per input, put in input
/// order by each item's `index` (or by position when no item has an `index`), all of one
/// non-zero dimension, all values finite as `f32`.
pub(crate) fn parse_reply(url: &str, text: &str, expected: usize) -> Result<Vec<Vec<f32>>, Error> {
    let malformed = |(field, problem): FieldProblem| Error::MalformedReply {
        url: url.to_string(),
        field,
        problem,
        body_excerpt: excerpt(text),
    };
    let root: Value = serde_json::from_str(text)
        .map_err(|e| malformed(("(body)".into(), format!("is not JSON ({e})"))))?;
    let data = data_items(&root, expected).map_err(malformed)?;
    let any_index = data.iter().any(|item| item.get("index").is_some());
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    let mut dim: Option<usize> = None;
    for (pos, item) in data.iter().enumerate() {
        let slot = if any_index {
            slot_of(item, pos, expected).map_err(malformed)?
        } else {
            pos
        };
        let vector = vector_of(item, pos, &mut dim).map_err(malformed)?;
        if slots[slot].is_some() {
            return Err(malformed((
                format!("data[{pos}].index"),
                format!("repeats index {slot}; every input must get exactly one embedding"),
            )));
        }
        slots[slot] = Some(vector);
    }
    // `expected` items, each filling a distinct slot in 0..expected: every slot is filled.
    Ok(slots.into_iter().flatten().collect())
}

/// The reply's `data` array, which must hold `expected` items.
fn data_items(root: &Value, expected: usize) -> Result<&Vec<Value>, FieldProblem> {
    if !root.is_object() {
        return Err((
            "(body)".into(),
            format!("is a JSON {}, not an object", kind(root)),
        ));
    }
    let data = match root.get("data") {
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err((
                "data".into(),
                format!("is a JSON {}, not an array", kind(other)),
            ))
        }
        None => return Err(("data".into(), "is missing".into())),
    };
    if data.len() != expected {
        return Err((
            "data".into(),
            format!(
                "has {} item(s) for {expected} input(s); the server may cap the batch size, \
                 so send smaller batches (Client::embed_batched)",
                data.len()
            ),
        ));
    }
    Ok(data)
}

/// The input position item `pos` names with its `index`.
fn slot_of(item: &Value, pos: usize, expected: usize) -> Result<usize, FieldProblem> {
    let field = format!("data[{pos}].index");
    let Some(index) = item.get("index") else {
        return Err((field, "is missing while other items have one".into()));
    };
    match index.as_u64().and_then(|i| usize::try_from(i).ok()) {
        Some(i) if i < expected => Ok(i),
        _ => Err((
            field,
            format!(
                "is {index}, not an input position from 0 to {}",
                expected - 1
            ),
        )),
    }
}

/// Item `pos`'s embedding: a non-empty array of finite `f32`s, of the same
/// dimension as the items before it (`dim`, set by the first).
fn vector_of(item: &Value, pos: usize, dim: &mut Option<usize>) -> Result<Vec<f32>, FieldProblem> {
    let field = format!("data[{pos}].embedding");
    let values = match item.get("embedding") {
        Some(Value::Array(a)) => a,
        Some(Value::String(_)) => {
            return Err((
                field,
                "is a string (base64?), not an array of numbers; the server must reply \
                 with encoding_format float"
                    .into(),
            ))
        }
        Some(other) => {
            return Err((
                field,
                format!("is a JSON {}, not an array of numbers", kind(other)),
            ))
        }
        None => return Err((field, "is missing".into())),
    };
    if values.is_empty() {
        return Err((field, "is empty".into()));
    }
    match *dim {
        None => *dim = Some(values.len()),
        Some(d) if d != values.len() => {
            return Err((
                field,
                format!(
                    "has {} dimensions where earlier items have {d}; all embeddings of one \
                     model must have the same size",
                    values.len()
                ),
            ))
        }
        Some(_) => {}
    }
    values
        .iter()
        .enumerate()
        .map(|(j, v)| {
            // Narrowing to f32 is the point: out-of-range values become infinite and are refused.
            #[allow(clippy::cast_possible_truncation)]
            let x = v.as_f64().map(|x| x as f32);
            match x {
                Some(x) if x.is_finite() => Ok(x),
                Some(_) => Err((
                    format!("{field}[{j}]"),
                    format!("is {v}, which is not a finite 32-bit float"),
                )),
                None => Err((
                    format!("{field}[{j}]"),
                    format!("is a JSON {}, not a number", kind(v)),
                )),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str, n: usize) -> (String, String) {
        match parse_reply("u", text, n) {
            Err(Error::MalformedReply { field, problem, .. }) => (field, problem),
            other => panic!("expected MalformedReply, got {other:?}"),
        }
    }

    #[test]
    fn orders_by_index() {
        let v = parse_reply(
            "u",
            r#"{"data":[{"index":1,"embedding":[1,2]},{"index":0,"embedding":[3,4]}]}"#,
            2,
        )
        .unwrap();
        assert_eq!(v, vec![vec![3.0, 4.0], vec![1.0, 2.0]]);
    }

    #[test]
    fn positional_without_indices() {
        let v = parse_reply("u", r#"{"data":[{"embedding":[1]},{"embedding":[2]}]}"#, 2).unwrap();
        assert_eq!(v, vec![vec![1.0], vec![2.0]]);
    }

    #[test]
    fn malformed_cases() {
        assert_eq!(problem("{}", 1).0, "data");
        assert_eq!(problem(r#"{"data":[]}"#, 1).0, "data");
        assert_eq!(
            problem(r#"{"data":[{"index":0}]}"#, 1).0,
            "data[0].embedding"
        );
        assert_eq!(
            problem(r#"{"data":[{"index":0,"embedding":[]}]}"#, 1).0,
            "data[0].embedding"
        );
        assert_eq!(
            problem(r#"{"data":[{"index":0,"embedding":"AAAA"}]}"#, 1).0,
            "data[0].embedding"
        );
        assert_eq!(
            problem(r#"{"data":[{"index":0,"embedding":[1e300]}]}"#, 1).0,
            "data[0].embedding[0]"
        );
        assert_eq!(
            problem(r#"{"data":[{"index":0,"embedding":["x"]}]}"#, 1).0,
            "data[0].embedding[0]"
        );
        assert_eq!(
            problem(
                r#"{"data":[{"index":0,"embedding":[1,2]},{"index":1,"embedding":[1]}]}"#,
                2
            )
            .0,
            "data[1].embedding"
        );
        assert_eq!(
            problem(
                r#"{"data":[{"index":0,"embedding":[1]},{"index":0,"embedding":[1]}]}"#,
                2
            )
            .0,
            "data[1].index"
        );
        assert_eq!(
            problem(r#"{"data":[{"index":5,"embedding":[1]}]}"#, 1).0,
            "data[0].index"
        );
        assert_eq!(
            problem(r#"{"data":[{"index":-1,"embedding":[1]}]}"#, 1).0,
            "data[0].index"
        );
        assert_eq!(
            problem(
                r#"{"data":[{"index":0,"embedding":[1]},{"embedding":[1]}]}"#,
                2
            )
            .0,
            "data[1].index"
        );
    }
}
