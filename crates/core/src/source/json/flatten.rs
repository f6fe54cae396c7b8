//! Nested objects as columns: with flattening, the members of an object-valued member
//! become members of the record, their keys the path's keys joined by
//! [`PART`](crate::source::keys::PART) (named by the separator in the column). Arrays,
//! and objects inside arrays, stay JSON text; an empty object gives no member.

use serde_json::{Map, Value};

use super::objects::parse_lossless_keeping;
use crate::source::keys::PART;

/// Reads again, as objects, the members of `map` named in `whole`: objects that
/// [`parse_lossless_keeping`] kept as their JSON text (an integer past 64 bits or a
/// negative zero in them), so that flattening finds their members, each kept as the
/// same rules keep a record's own (at every depth).
pub(super) fn objects_again(map: &mut Map<String, Value>, whole: &[String]) {
    for k in whole {
        let Some(v) = map.get_mut(k) else { continue };
        let Value::String(text) = v else { continue };
        if let Ok((Value::Object(mut inner), deeper)) = parse_lossless_keeping(text.as_bytes()) {
            objects_again(&mut inner, &deeper);
            *v = Value::Object(inner);
        }
    }
}

/// A key holding a NUL byte, in `map` or (with `deep`) in an object nested in it
/// outside arrays: no column can be named by it.
pub(super) fn nul_key(map: &Map<String, Value>, deep: bool) -> Option<&str> {
    map.iter().find_map(|(k, v)| {
        if k.contains('\0') {
            return Some(k.as_str());
        }
        match v {
            Value::Object(m) if deep => nul_key(m, true),
            _ => None,
        }
    })
}

/// `map` flattened (see the module comment): members in the order their keys are
/// first met, depth first.
pub(super) fn flatten(map: Map<String, Value>) -> Map<String, Value> {
    fn walk(
        path: &mut String,
        depth: usize,
        map: Map<String, Value>,
        out: &mut Map<String, Value>,
    ) {
        for (k, v) in map {
            let len = path.len();
            if depth > 0 {
                path.push(PART);
            }
            path.push_str(&k);
            match v {
                Value::Object(m) => walk(path, depth + 1, m, out),
                v => {
                    out.insert(path.clone(), v);
                }
            }
            path.truncate(len);
        }
    }
    let mut out = Map::new();
    walk(&mut String::new(), 0, map, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_of_nested_objects_come_up_with_their_paths() {
        let Value::Object(m) = serde_json::json!({
            "id": 1,
            "owner": {"name": "Zoë", "address": {"city": "Köln", "zip": null}, "tags": [{"a": 1}]},
            "empty": {},
            "": {"x": true},
        }) else {
            unreachable!()
        };
        let flat = flatten(m);
        let keys: Vec<String> = flat.keys().map(|k| k.replace(PART, ">")).collect();
        assert_eq!(
            keys,
            [
                "id",
                "owner>name",
                "owner>address>city",
                "owner>address>zip",
                "owner>tags",
                ">x"
            ]
        );
        assert_eq!(flat["owner\0tags"], serde_json::json!([{"a": 1}]));
    }
}
