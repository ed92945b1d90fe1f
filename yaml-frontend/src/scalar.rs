//! YAML 1.2 core-schema resolution of plain scalars.
//!
//! Only plain (unquoted) scalars are resolved; quoted and block scalars are always strings.
//! Booleans are exactly `true|True|TRUE|false|False|FALSE`: the YAML 1.1 words `on`, `off`,
//! `yes`, `no`, `y`, `n` stay strings, which keeps the `on:` transition key a string.

/// A resolved scalar value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str,
}

/// Resolves a plain scalar per the YAML 1.2.2 core schema (§10.3.2).
pub(crate) fn resolve_plain(s: &str) -> Resolved {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        "true" | "True" | "TRUE" => return Resolved::Bool(true),
        "false" | "False" | "FALSE" => return Resolved::Bool(false),
        ".nan" | ".NaN" | ".NAN" => return Resolved::Float(f64::NAN),
        _ => {}
    }
    let (sign, body) = match s.as_bytes()[0] {
        b'-' => (-1.0, &s[1..]),
        b'+' => (1.0, &s[1..]),
        _ => (1.0, s),
    };
    if matches!(body, ".inf" | ".Inf" | ".INF") {
        return Resolved::Float(sign * f64::INFINITY);
    }
    if body.len() == s.len() {
        if let Some(oct) = s.strip_prefix("0o") {
            return radix_int(oct, 8);
        }
        if let Some(hex) = s.strip_prefix("0x") {
            return radix_int(hex, 16);
        }
    }
    if !body.is_empty() && body.bytes().all(|b| b.is_ascii_digit()) {
        return match s.parse::<i64>() {
            Ok(i) => Resolved::Int(i),
            Err(_) => s.parse::<f64>().map_or(Resolved::Str, Resolved::Float),
        };
    }
    if is_core_float(body) {
        return s.parse::<f64>().map_or(Resolved::Str, Resolved::Float);
    }
    Resolved::Str
}

fn radix_int(digits: &str, radix: u32) -> Resolved {
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return Resolved::Str;
    }
    i64::from_str_radix(digits, radix).map_or(Resolved::Str, Resolved::Int)
}

/// `( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?` without the sign.
fn is_core_float(body: &str) -> bool {
    let b = body.as_bytes();
    let mut i = 0;
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    let int_digits = digits(&mut i);
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        frac_digits = digits(&mut i);
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_12_booleans_only() {
        for t in ["true", "True", "TRUE"] {
            assert_eq!(resolve_plain(t), Resolved::Bool(true));
        }
        for f in ["false", "False", "FALSE"] {
            assert_eq!(resolve_plain(f), Resolved::Bool(false));
        }
        for s in ["on", "off", "yes", "no", "y", "n", "Yes", "ON", "tRUE"] {
            assert_eq!(resolve_plain(s), Resolved::Str, "{s}");
        }
    }

    #[test]
    fn numbers_and_nulls() {
        assert_eq!(resolve_plain("42"), Resolved::Int(42));
        assert_eq!(resolve_plain("-7"), Resolved::Int(-7));
        assert_eq!(resolve_plain("0x1F"), Resolved::Int(31));
        assert_eq!(resolve_plain("0o17"), Resolved::Int(15));
        assert_eq!(resolve_plain("1.5"), Resolved::Float(1.5));
        assert_eq!(resolve_plain(".5"), Resolved::Float(0.5));
        assert_eq!(resolve_plain("1e3"), Resolved::Float(1000.0));
        assert_eq!(resolve_plain("-.inf"), Resolved::Float(f64::NEG_INFINITY));
        assert_eq!(resolve_plain("~"), Resolved::Null);
        assert_eq!(resolve_plain("1.2.3"), Resolved::Str);
        assert_eq!(resolve_plain("0x"), Resolved::Str);
        assert_eq!(resolve_plain("1_000"), Resolved::Str);
        assert_eq!(resolve_plain("e3"), Resolved::Str);
    }
}
