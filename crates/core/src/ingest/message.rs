//! One message of a stream: its key and the fields it carries, checked.

use serde_json::{Map, Value};

/// One part of a key: JSON strings and integers are usable keys; nothing else is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyPart {
    Int(i64),
    Text(String),
}

/// A field's new value. Nested objects and arrays are kept as their JSON text.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl FieldValue {
    /// As [`FieldValue::from_json`], moving a string instead of copying it.
    pub fn from_json_owned(v: Value) -> FieldValue {
        match v {
            Value::String(s) => FieldValue::Text(s),
            other => FieldValue::from_json(&other),
        }
    }

    /// The value of a JSON field (booleans as 1/0; integers beyond i64 as their digits).
    pub fn from_json(v: &Value) -> FieldValue {
        match v {
            Value::Null => FieldValue::Null,
            Value::Bool(b) => FieldValue::Int(i64::from(*b)),
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => FieldValue::Int(i),
                (None, Some(f)) if n.is_f64() => FieldValue::Real(f),
                _ => FieldValue::Text(n.to_string()),
            },
            Value::String(s) => FieldValue::Text(s.clone()),
            other => FieldValue::Text(other.to_string()),
        }
    }
}

/// A message split: its key parts, and its other fields in message order.
pub type Split = (Vec<KeyPart>, Vec<(String, Value)>);

/// Splits `obj` into its key (the values of `key_fields`, in order) and its other fields.
/// Errors say why the message cannot be applied.
pub fn split(obj: Map<String, Value>, key_fields: &[String]) -> Result<Split, String> {
    let mut key = Vec::with_capacity(key_fields.len());
    for k in key_fields {
        match obj.get(k) {
            None => return Err(format!("the key field {k:?} is missing")),
            Some(Value::Null) => return Err(format!("the key field {k:?} is null")),
            Some(Value::String(s)) => key.push(KeyPart::Text(s.clone())),
            Some(Value::Number(n)) if n.as_i64().is_some() => {
                key.push(KeyPart::Int(n.as_i64().unwrap_or_default()))
            }
            Some(other) => {
                return Err(format!(
                    "the key field {k:?} is {}; a key must be a string or an integer",
                    match other {
                        Value::Bool(_) => "a boolean",
                        Value::Number(_) => "a non-integer number",
                        Value::Array(_) => "an array",
                        _ => "an object",
                    }
                ))
            }
        }
    }
    let fields = obj
        .into_iter()
        .filter(|(k, _)| !key_fields.iter().any(|kf| kf == k))
        .collect();
    Ok((key, fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        match serde_json::from_str(s) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn keys_must_be_strings_or_integers() {
        let k = vec!["id".to_string()];
        assert_eq!(
            split(obj(r#"{"id": "a", "x": 1}"#), &k).map(|(k, f)| (k, f.len())),
            Ok((vec![KeyPart::Text("a".into())], 1))
        );
        assert_eq!(
            split(obj(r#"{"id": 7}"#), &k).map(|(k, _)| k),
            Ok(vec![KeyPart::Int(7)])
        );
        assert_eq!(
            split(obj(r#"{"x": 1}"#), &k).err(),
            Some("the key field \"id\" is missing".into())
        );
        assert_eq!(
            split(obj(r#"{"id": null}"#), &k).err(),
            Some("the key field \"id\" is null".into())
        );
        assert!(split(obj(r#"{"id": 1.5}"#), &k).is_err_and(|e| e.contains("non-integer")));
        assert!(split(obj(r#"{"id": [1]}"#), &k).is_err_and(|e| e.contains("an array")));
    }

    #[test]
    fn values_keep_their_kind() {
        let v: Value =
            serde_json::from_str(r#"[true, 3, 2.5, "s", {"a": 1}, 18446744073709551615]"#)
                .unwrap_or_default();
        let got: Vec<FieldValue> = v
            .as_array()
            .map(|a| a.iter().map(FieldValue::from_json).collect())
            .unwrap_or_default();
        assert_eq!(
            got,
            vec![
                FieldValue::Int(1),
                FieldValue::Int(3),
                FieldValue::Real(2.5),
                FieldValue::Text("s".into()),
                FieldValue::Text(r#"{"a":1}"#.into()),
                FieldValue::Text("18446744073709551615".into())
            ]
        );
    }
}
