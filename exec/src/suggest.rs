//! "Did you mean" suggestions by edit distance: the one rule of tool names and parameters
//! here and of the YAML loader's diagnostics.

/// The closest candidate to `word`, if it is close enough to be a plausible typo.
///
/// Closeness: Damerau-Levenshtein distance at most one third of the longer word (at least 1),
/// or a case-insensitive / separator-insensitive exact match.
pub fn did_you_mean<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let norm = |s: &str| s.to_ascii_lowercase().replace(['-', '_'], "");
    let wn = norm(word);
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let d = if norm(c) == wn {
            0
        } else {
            strsim::damerau_levenshtein(word, c)
        };
        let limit = (word.chars().count().max(c.chars().count()) / 3).max(1);
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
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
