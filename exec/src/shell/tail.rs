//! The tail of a shell step's stdout or stderr: at most `shell.maxOutputBytes` of it, counted
//! as the text takes them once written in JSON, cut at a character's boundary.

use std::collections::VecDeque;

/// The last `max` bytes of a stream, and how many came before them.
#[derive(Debug)]
pub(super) struct Tail {
    max: usize,
    kept: VecDeque<u8>,
    cut: u64,
}

impl Tail {
    pub(super) fn new(max: usize) -> Self {
        Self {
            max,
            kept: VecDeque::new(),
            cut: 0,
        }
    }

    pub(super) fn push(&mut self, bytes: &[u8]) {
        // Only the last `max` bytes of this chunk can survive.
        let skip = bytes.len().saturating_sub(self.max);
        self.cut += skip as u64;
        self.kept.extend(&bytes[skip..]);
        let excess = self.kept.len().saturating_sub(self.max);
        if excess > 0 {
            self.kept.drain(..excess);
            self.cut += excess as u64;
        }
    }

    /// The kept text, with a line marking the cut, and whether there was one.
    ///
    /// The text is cut to at most `max` bytes once written as JSON (control characters grow
    /// sixfold there, `\u0001`, and each byte that is no UTF-8 becomes U+FFFD, three bytes),
    /// so that an output larger than the engine's limit for a task's output does not fail a
    /// step that succeeded; UTF-8 text counts as its own bytes. The cut falls between
    /// characters: a character the stream's cut began in the middle of goes with the cut.
    pub(super) fn text(&self) -> (String, bool) {
        let (a, b) = self.kept.as_slices();
        let all = [a, b].concat();
        // The bytes of a character whose beginning was cut off.
        let orphans = if self.cut > 0 {
            all.iter()
                .take(3)
                .take_while(|b| is_continuation(**b))
                .count()
        } else {
            0
        };
        let bytes = &all[orphans..];
        let cut_before = self.cut + orphans as u64;
        let mut from = start_within(bytes, self.max);
        if cut_before > 0 || from > 0 {
            // The marker line counts within `max` too: room is made for the longest it can
            // be (its newline written as two characters in JSON).
            let marker = format!("[… {} bytes truncated …]\n", self.cut + all.len() as u64);
            from = start_within(bytes, self.max.saturating_sub(marker.len() + 1));
        }
        let cut = cut_before + from as u64;
        let kept = String::from_utf8_lossy(&bytes[from..]);
        if cut == 0 {
            (kept.into_owned(), false)
        } else {
            (format!("[… {cut} bytes truncated …]\n{kept}"), true)
        }
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// Where the longest tail of `bytes` that takes at most `budget` bytes in a JSON string
/// begins, at a character's boundary (a byte that is no UTF-8 counts as a character of its
/// own).
fn start_within(bytes: &[u8], budget: usize) -> usize {
    let mut size = 0usize;
    let mut end = bytes.len();
    while end > 0 {
        // The character that ends at `end`: its first byte is the nearest non-continuation
        // byte at most four back.
        let lowest = end.saturating_sub(4);
        let mut begin = end - 1;
        while begin > lowest && is_continuation(bytes[begin]) {
            begin -= 1;
        }
        let (begin, taken) = match std::str::from_utf8(&bytes[begin..end]) {
            Ok(s) if s.chars().count() == 1 => (begin, s.chars().map(json_size).sum()),
            // Not one character: the last byte alone, which JSON shows as U+FFFD.
            _ => (end - 1, 3),
        };
        if size + taken > budget {
            return end;
        }
        size += taken;
        end = begin;
    }
    0
}

/// How many bytes `c` takes in a JSON string: an escape for quotes, backslashes and control
/// characters, else its UTF-8.
fn json_size(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\t' | '\r' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json_len(text: &str) -> usize {
        serde_json::to_string(text).unwrap().len() - 2
    }

    #[test]
    fn the_tail_keeps_the_end_and_marks_the_cut() {
        let mut t = Tail::new(10);
        t.push(b"hello");
        assert_eq!(t.text(), ("hello".to_string(), false));
        // The marker counts within the bound: 40 bytes hold it and the last 4 bytes.
        let mut t = Tail::new(40);
        t.push(b"0123456789012345678901234567890123456789012345678901234567896789");
        let (text, cut) = t.text();
        assert!(cut);
        assert!(text.starts_with("[… ") && text.ends_with("6789"), "{text}");
        assert!(json_len(&text) <= 40, "{text}");
        // Chunk by chunk, as the pipe delivers it.
        let mut t = Tail::new(40);
        for chunk in [&b"01"[..], b"234", b"5", &[b'x'; 100][..], b"6789"] {
            t.push(chunk);
        }
        let (text, _) = t.text();
        assert!(text.starts_with("[… ") && text.ends_with("6789"), "{text}");
        assert!(json_len(&text) <= 40, "{text}");
        assert!(t.kept.len() <= 40);
        let mut t = Tail::new(0);
        t.push(b"abc");
        assert_eq!(t.text(), ("[… 3 bytes truncated …]\n".to_string(), true));
    }

    /// UTF-8 text counts as its own bytes, not as three a byte: the tail of a non-ASCII
    /// output fills its bound, and begins with a whole character.
    #[test]
    fn non_ascii_text_fills_the_bound_and_is_cut_between_characters() {
        for ch in ["é", "中", "😀"] {
            let mut t = Tail::new(1001);
            t.push(ch.repeat(3000).as_bytes());
            let (text, cut) = t.text();
            assert!(cut);
            let kept = text.split_once('\n').unwrap().1;
            assert!(!kept.contains('\u{FFFD}'), "{ch}: {kept}");
            assert!(kept.chars().all(|c| c.to_string() == ch), "{ch}");
            let len = json_len(&text);
            assert!(len <= 1001 && len > 1001 - 4 - 40, "{ch}: {len}");
        }
        // Control characters and bytes that are no UTF-8 still count as JSON writes them.
        let mut t = Tail::new(200);
        t.push(&[0x01; 100]);
        t.push(&[0xff; 100]);
        let (text, _) = t.text();
        assert!(json_len(&text) <= 200, "{text}");
    }
}
