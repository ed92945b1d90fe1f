//! The length of a value as compact JSON, counted without building the text.

/// The bytes `value` takes as compact JSON. A value that does not encode counts what was
/// written before it failed (JSON values and the engine's views always encode).
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    #[test]
    fn it_counts_what_serde_json_writes() {
        let v = serde_json::json!({"a": [1, "two", null], "b": "é"});
        assert_eq!(super::json_len(&v), serde_json::to_vec(&v).unwrap().len());
    }
}
