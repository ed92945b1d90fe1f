//! [`input_hash`]: the stable hash of a step's input that replay compares.

use serde_json::Value;

/// A stable 64-bit hash of a JSON value (FNV-1a over its compact serialisation with the keys of
/// every object sorted), used to check on replay that a step is requested with the same input it
/// was journaled with.
///
/// The keys are sorted here rather than by the map type: with serde_json's `preserve_order`
/// feature (which any crate in a dependency tree can turn on) objects keep insertion order, and
/// a hash over that order would change with it and break the replay of stored runs. The bytes
/// hashed are exactly those of `serde_json::to_vec` over sorted maps.
pub fn input_hash(v: &Value) -> u64 {
    let mut h = Fnv1a(0xcbf2_9ce4_8422_2325);
    write_canonical(v, &mut h);
    h.0
}

/// [`input_hash`] of a JSON string, without building the [`Value`]: the same bytes are hashed.
/// Steps hash their names with it, once per step on every replay.
pub(crate) fn str_hash(s: &str) -> u64 {
    let mut h = Fnv1a(0xcbf2_9ce4_8422_2325);
    // Writing to the hasher cannot fail, and neither can serialising a string.
    let _ = serde_json::to_writer(&mut h, s);
    h.0
}

/// FNV-1a, fed by serialisation.
struct Fnv1a(u64);

impl std::io::Write for Fnv1a {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for &b in buf {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Writes `v` as compact JSON with the keys of every object in byte order.
fn write_canonical(v: &Value, out: &mut Fnv1a) {
    use std::io::Write as _;
    // Writing to the hasher cannot fail, and neither can serialising a string or a number.
    match v {
        Value::Array(items) => {
            let _ = out.write_all(b"[");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    let _ = out.write_all(b",");
                }
                write_canonical(item, out);
            }
            let _ = out.write_all(b"]");
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            let _ = out.write_all(b"{");
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    let _ = out.write_all(b",");
                }
                let _ = serde_json::to_writer(&mut *out, key);
                let _ = out.write_all(b":");
                write_canonical(value, out);
            }
            let _ = out.write_all(b"}");
        }
        scalar => {
            let _ = serde_json::to_writer(&mut *out, scalar);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{input_hash, str_hash};

    /// FNV-1a over `serde_json::to_vec`: the hash as it was first defined.
    fn hash_of_to_vec(v: &Value) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in serde_json::to_vec(v).unwrap() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h
    }

    #[test]
    fn the_canonical_hash_equals_the_hash_of_the_sorted_serialisation() {
        let values = [
            json!(null),
            json!("a \"quoted\" \\ line\n\u{1}\u{fc}"),
            json!([1, -2, 3.25, 1e300, u64::MAX, i64::MIN, [], {}]),
            json!({"b": {"d": [true, false], "c": null}, "a": "x", "B": 0, "": 1}),
        ];
        for v in &values {
            assert_eq!(input_hash(v), hash_of_to_vec(v), "{v}");
        }
    }

    #[test]
    fn the_hash_of_a_str_is_the_hash_of_its_json_string() {
        for s in ["", "noop", "a \"quoted\" \\ line\n\u{1}\u{fc}"] {
            assert_eq!(str_hash(s), input_hash(&Value::String(s.into())), "{s:?}");
        }
    }
}
