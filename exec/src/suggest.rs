//! "Did you mean" suggestions by edit distance: the one rule of tool names and parameters
//! here and of the YAML loader's diagnostics.

/// The closest candidate to `word`, if it is close enough to be a plausible typo.
///
/// Closeness: Damerau-Levenshtein distance at most one third of the longer word (at least 1;
/// between two words of one or two characters, only the same word in other case), or a
/// case-insensitive / separator-insensitive exact match. Failing that, the one candidate
/// that is the word with a part left out (`shell` for `shell_task`, `timeout` for
/// `timeoutSeconds`, `review` for `human_review`).
pub fn did_you_mean<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let norm = |s: &str| s.to_ascii_lowercase().replace(['-', '_'], "");
    let wn = norm(word);
    let mut best: Option<(usize, &'a str)> = None;
    let mut parts: Vec<&'a str> = Vec::new();
    // A candidate that is the word itself (a document whose name another rule refuses) is no
    // suggestion: the word was written that way.
    for c in candidates.into_iter().filter(|c| *c != word) {
        let d = if norm(c) == wn {
            0
        } else {
            strsim::damerau_levenshtein(word, c)
        };
        let longer = word.chars().count().max(c.chars().count());
        let limit = if longer <= 2 { 0 } else { (longer / 3).max(1) };
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
        if is_part_of(word, c) && !parts.contains(&c) {
            parts.push(c);
        }
    }
    best.map(|(_, c)| c).or(match parts.as_slice() {
        [one] => Some(*one),
        _ => None,
    })
}

/// Whether `word` (three characters or more) is `candidate` with a part left out at a word
/// boundary: before or after a `_`/`-`, or before an upper-case letter.
fn is_part_of(word: &str, candidate: &str) -> bool {
    if word.chars().count() < 3 || word.len() >= candidate.len() {
        return false;
    }
    let (w, c) = (word.to_ascii_lowercase(), candidate.to_ascii_lowercase());
    let prefix = c.starts_with(&w)
        && candidate[word.len()..]
            .chars()
            .next()
            .is_some_and(|n| n == '_' || n == '-' || n.is_ascii_uppercase());
    let suffix = c.ends_with(&w) && candidate[..candidate.len() - word.len()].ends_with(['_', '-']);
    prefix || suffix
}

/// `" (did you mean 'x'?)"` or the empty string.
pub fn hint<'a, I>(word: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    did_you_mean(word, candidates)
        .map(|c| format!(" (did you mean '{c}'?)"))
        .unwrap_or_default()
}

/// `[a, b, c]`.
pub fn list<'a, I>(items: I) -> String
where
    I: IntoIterator<Item = &'a str>,
{
    let v: Vec<&str> = items.into_iter().collect();
    format!("[{}]", v.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_itself_is_no_suggestion() {
        assert_eq!(did_you_mean("über", ["über", "uber"]), Some("uber"));
        assert_eq!(hint("über", ["über"]), "");
    }

    #[test]
    fn suggests_the_whole_word_of_a_part_and_no_letter_for_another() {
        let types = ["shell_task", "script_task", "terminal"];
        assert_eq!(did_you_mean("shell", types), Some("shell_task"));
        assert_eq!(
            did_you_mean("timeout", ["timeoutSeconds", "retry"]),
            Some("timeoutSeconds")
        );
        assert_eq!(
            did_you_mean("review", ["human_review", "plan"]),
            Some("human_review")
        );
        assert_eq!(
            did_you_mean("technical", ["technical_error", "business_error"]),
            Some("technical_error")
        );
        // Two wholes of one part: neither is the one meant.
        assert_eq!(did_you_mean("run", ["run_a", "run_b"]), None);
        // One letter for another is no typo of a name.
        assert_eq!(did_you_mean("x", ["a", "b", "c"]), None);
        assert_eq!(did_you_mean("A", ["a", "b"]), Some("a"));
    }

    #[test]
    fn suggests_close_words_only() {
        let c = ["merge", "plan", "route"];
        assert_eq!(did_you_mean("mrege", c), Some("merge"));
        assert_eq!(did_you_mean("xyzzy", c), None);
        assert_eq!(did_you_mean("storAs", ["storeAs", "on"]), Some("storeAs"));
        assert_eq!(
            hint("shel_task", ["shell_task"]),
            " (did you mean 'shell_task'?)"
        );
    }
}
