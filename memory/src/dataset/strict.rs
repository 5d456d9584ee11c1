//! A dataset line read as JSON with every object's keys distinct.
//!
//! `serde_json` keeps the last of two equal keys without a word, so a line
//! such as `{"task": "a", ..., "task": "b"}` would lose `a` silently. The
//! reader here builds the same [`Value`] and refuses the second key instead,
//! with the line and column where it stands.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// Parses `text` as one JSON value whose objects have distinct keys.
pub(crate) fn from_str(text: &str) -> serde_json::Result<Value> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Distinct.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Deserializes a [`Value`], refusing an object with a key twice.
struct Distinct;

impl<'de> DeserializeSeed<'de> for Distinct {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Distinct {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(Distinct)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "the key `{key}` appears twice in one object; keep one of them"
                )));
            }
            let value = map.next_value_seed(Distinct)?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_serde_json_reads() {
        let texts = [
            r#"{"a": [1, -2, 3.5, 18446744073709551615, true, null, "x\u00e9"], "b": {"c": {}}}"#,
            "[]",
            "\"s\"",
            "  7  ",
        ];
        for t in texts {
            let ours = from_str(t).unwrap();
            let theirs: Value = serde_json::from_str(t).unwrap();
            assert_eq!(ours, theirs, "{t}");
        }
    }

    #[test]
    fn refuses_a_key_twice_at_any_depth() {
        for t in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"x": [{"id": 1, "b": 0, "id": 2}]}"#,
        ] {
            let e = from_str(t).unwrap_err().to_string();
            assert!(e.contains("appears twice"), "{e}");
            assert!(e.contains("column"), "{e}");
        }
        // The same key in two objects is fine.
        assert!(from_str(r#"[{"a": 1}, {"a": 2}]"#).is_ok());
    }

    #[test]
    fn refuses_trailing_text_and_deep_nesting() {
        assert!(from_str(r#"{"a": 1} x"#).is_err());
        assert!(from_str(&"[".repeat(100_000)).is_err());
    }
}
