use serde_json::{Value, json};

use super::*;

fn state() -> Value {
    json!({
        "plan_output": {"risk": "low", "score": 7, "ratio": 0.5, "files": ["a.rs", "b.rs"]},
        "ok": true,
        "name": "it's",
        "empty": "",
        "code": 204
    })
}

fn params() -> Value {
    json!({"env": "prod", "limit": 10})
}

fn eval(src: &str) -> Result<bool, EvalError> {
    let c = Condition::parse(src).unwrap_or_else(|e| panic!("{src}: {e}"));
    c.evaluate(&state(), &params())
}

fn value(src: &str) -> Value {
    match Condition::parse(src) {
        Ok(c) => c
            .evaluate_value(&state(), &params())
            .unwrap_or(json!("ERR")),
        Err(e) => json!(format!("PARSE: {e}")),
    }
}

fn parse_err(src: &str) -> ConditionError {
    match Condition::parse(src) {
        Ok(_) => ConditionError {
            kind: ConditionErrorKind::Syntax,
            offset: usize::MAX,
            message: "parsed unexpectedly".into(),
        },
        Err(e) => e,
    }
}

#[test]
fn reference_example() {
    assert_eq!(eval("#state['plan_output']['risk'] == 'low'"), Ok(true));
    assert_eq!(eval("#state['plan_output']['risk'] == 'high'"), Ok(false));
}

#[test]
fn comparisons() {
    assert_eq!(eval("#state['plan_output']['score'] > 5"), Ok(true));
    assert_eq!(eval("#state['plan_output']['score'] >= 7"), Ok(true));
    assert_eq!(eval("#state['plan_output']['score'] < 7"), Ok(false));
    assert_eq!(eval("#state['plan_output']['score'] <= 7.0"), Ok(true));
    assert_eq!(eval("#state['plan_output']['score'] != 8"), Ok(true));
    assert_eq!(eval("#state['plan_output']['score'] == 7.0"), Ok(true));
    assert_eq!(eval("#state['plan_output']['ratio'] < 1"), Ok(true));
    assert_eq!(eval("'abc' < 'abd'"), Ok(true));
    assert_eq!(eval("false < true"), Ok(true));
    assert_eq!(
        eval("#params['limit'] gt 3 and #params['env'] eq 'prod'"),
        Ok(true)
    );
    assert_eq!(eval("1 le 1 && (2 ge 3) == false"), Ok(true));
    assert_eq!(eval("-1 < 0"), Ok(true));
}

#[test]
fn nulls_and_missing_keys() {
    assert_eq!(eval("#state['nope'] == null"), Ok(true));
    assert_eq!(eval("#state['nope']['deeper'] == null"), Ok(true));
    assert_eq!(eval("null == null"), Ok(true));
    assert_eq!(eval("#state['nope'] < 1"), Ok(true));
    assert_eq!(eval("#state['nope']"), Ok(false));
    assert_eq!(eval("#tasks['plan']['output'] == null"), Ok(true));
}

#[test]
fn logic_short_circuits() {
    assert_eq!(eval("#state['ok'] && !false"), Ok(true));
    assert_eq!(eval("not #state['ok'] or true"), Ok(true));
    assert_eq!(eval("false && #state['name']"), Ok(false));
    assert_eq!(eval("true || #state['name']"), Ok(true));
    assert_eq!(eval("!(1 == 2)"), Ok(true));
}

#[test]
fn non_boolean_and_incomparable_are_errors() {
    assert!(matches!(
        eval("#state['name'] && true"),
        Err(EvalError::NotBoolean { offset: 0, .. })
    ));
    assert!(matches!(
        eval("#state['code']"),
        Err(EvalError::NotBoolean { .. })
    ));
    assert!(matches!(
        eval("'a' < 1"),
        Err(EvalError::Incomparable {
            offset: 4,
            left: "a string",
            right: "a number"
        })
    ));
}

#[test]
fn in_matches_ternary_elvis() {
    assert_eq!(
        eval("#state['plan_output']['risk'] in {'low', 'medium'}"),
        Ok(true)
    );
    assert_eq!(eval("#params['limit'] in {1, 2}"), Ok(false));
    assert_eq!(eval("#state['name'] matches 'it.s'"), Ok(true));
    assert_eq!(
        eval("#state['name'] matches 'it'"),
        Ok(false),
        "matches is a full match"
    );
    assert_eq!(eval("#state['code'] matches '2\\d\\d'"), Ok(true));
    assert_eq!(eval("#state['nope'] matches '.*'"), Ok(false));
    assert_eq!(value("#state['ok'] ? 'yes' : 'no'"), json!("yes"));
    assert_eq!(value("#state['nope'] ?: 'fallback'"), json!("fallback"));
    assert_eq!(value("#state['empty'] ?: 'fallback'"), json!("fallback"));
    assert_eq!(value("#params['env'] ?: 'fallback'"), json!("prod"));
    assert_eq!(value("(#params['limit'])"), json!(10));
}

#[test]
fn a_placeholder_in_a_matches_pattern_is_refused_with_why() {
    let e = parse_err("#params['env'] matches '${params.re}'");
    let said = e.to_string();
    assert!(
        said.contains("holds a placeholder ('${params.re}')") && said.contains("written out"),
        "{said}"
    );
    // A literal `${` is matched by `\$\{`, which is no placeholder.
    assert_eq!(eval("#state['name'] matches 'it.s|\\$\\{a\\}'"), Ok(true));
    assert!(
        said.contains("write '\\$\\{' to match a literal '${'"),
        "{said}"
    );
}

#[test]
fn literals_and_navigation() {
    assert_eq!(value("'it''s'"), json!("it's"));
    assert_eq!(value("\"dq\""), json!("dq"));
    assert_eq!(value("1.25"), json!(1.25));
    assert_eq!(value("#state['plan_output'].files[1]"), json!("b.rs"));
    assert_eq!(value("#state['plan_output']['files'][5]"), Value::Null);
    assert_eq!(eval("#state['name'] == 'it''s'"), Ok(true));
}

/// Where a boolean is needed, a string converts as SpEL converts it (Spring's string to boolean
/// conversion); any other string stays an error.
#[test]
fn strings_convert_to_booleans_as_spel_converts_them() {
    let state = json!({"flag": "true", "off": " OFF ", "yes": "Yes", "zero": "0", "blank": ""});
    let eval = |src: &str| {
        Condition::parse(src)
            .unwrap_or_else(|e| panic!("{src}: {e}"))
            .evaluate(&state, &params())
    };
    assert_eq!(eval("#state['flag']"), Ok(true));
    assert_eq!(eval("!#state['flag']"), Ok(false));
    assert_eq!(eval("#state['off'] || #state['zero']"), Ok(false));
    assert_eq!(eval("#state['yes'] && 'on'"), Ok(true));
    assert_eq!(eval("#state['off'] ? false : true"), Ok(true));
    assert_eq!(eval("#params['limit'] > 3 ? 'yes' : 'no'"), Ok(true));
    // A string that is no boolean, and a string compared, stay as they were.
    for no_boolean in ["'maybe'", "#state['blank']", "!#state['blank']"] {
        assert!(
            matches!(
                eval(no_boolean),
                Err(EvalError::NotBoolean {
                    found: "a string that is none of true/false, on/off, yes/no, 1/0",
                    ..
                })
            ),
            "{no_boolean}"
        );
    }
    assert_eq!(eval("#state['flag'] == true"), Ok(false));
}

/// A list's index converts as SpEL converts it, and a string's index gives its character.
#[test]
fn indexes_convert_as_spel_converts_them() {
    assert_eq!(value("#state['plan_output']['files']['1']"), json!("b.rs"));
    assert_eq!(value("#state['plan_output']['files'][1.0]"), json!("b.rs"));
    assert_eq!(value("#state['plan_output']['files'][1.5]"), json!("b.rs"));
    assert_eq!(
        value("#state['plan_output']['files']['0x1']"),
        json!("b.rs")
    );
    assert_eq!(value("#state['plan_output']['files']['#1']"), json!("b.rs"));
    assert_eq!(value("#state['plan_output']['files'][-1]"), Value::Null);
    assert_eq!(value("#state['plan_output']['files'][true]"), Value::Null);
    assert_eq!(value("#state['name'][1]"), json!("t"));
    assert_eq!(value("#state['name']['3']"), json!("s"));
    assert_eq!(value("#state['name'][9]"), Value::Null);
    // By UTF-16 unit, as Java's `charAt`: half of a character reads as U+FFFD.
    assert_eq!(value("'\u{1F680}y'[2]"), json!("y"));
    assert_eq!(value("'\u{1F680}y'[1]"), json!("\u{FFFD}"));
    assert_eq!(value("#state['plan_output'].risk"), json!("low"));
}

/// SpEL's number literals: exponents, hexadecimal integers and type suffixes.
#[test]
fn number_literals_as_spel_writes_them() {
    assert_eq!(value("1.5e3"), json!(1500.0));
    assert_eq!(value("2E-2"), json!(0.02));
    assert_eq!(value("1e+2"), json!(100.0));
    assert_eq!(value("0x1F"), json!(31));
    assert_eq!(value("0XffL"), json!(255));
    assert_eq!(value("10L"), json!(10));
    assert_eq!(value("2.5d"), json!(2.5));
    assert_eq!(value("3f"), json!(3.0));
    assert_eq!(eval("#state['code'] == 2.04e2"), Ok(true));
    assert_eq!(eval("#params['limit'] < 1E2"), Ok(true));
    // An `e` without digits is no exponent.
    assert!(
        parse_err("1e").message.contains("'e'"),
        "{}",
        parse_err("1e")
    );
    assert!(
        parse_err("0x").message.contains("'x'"),
        "{}",
        parse_err("0x")
    );
}

#[test]
fn sandbox_rejections_with_offsets() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "T(java.lang.Runtime).getRuntime()",
            0,
            "type references T(...) are not allowed",
        ),
        (
            "new java.io.File('x')",
            0,
            "constructor calls 'new ...' are not allowed",
        ),
        (
            "#state['x'].toString() == 'a'",
            12,
            "method calls are not allowed in conditions",
        ),
        ("@bean.x == 1", 0, "bean references"),
        (
            "#root == 1",
            0,
            "unknown variable '#root': expected #state, #params or #tasks",
        ),
        ("#state['a'] = 1", 12, "assignment '=' is not allowed"),
        ("#state['a'] + 1 > 2", 12, "operator '+' is not supported"),
        (
            "#params['a'] between {1, 2}",
            13,
            "operator 'between' is not supported",
        ),
        (
            "#params['a'] instanceof T(Integer)",
            13,
            "operator 'instanceof' is not supported",
        ),
        ("foo == 1", 0, "bare name 'foo'"),
        ("#fn(1)", 0, "function calls are not allowed"),
        ("#state.?[x]", 6, "selection or projection"),
    ];
    for (src, off, msg) in cases {
        let e = parse_err(src);
        assert_eq!(e.kind, ConditionErrorKind::Sandbox, "{src}: {e}");
        assert_eq!(e.offset, *off, "{src}: {e}");
        assert!(e.message.contains(msg), "{src}: {e}");
    }
}

#[test]
fn syntax_errors_with_offsets() {
    let cases: &[(&str, usize, &str)] = &[
        ("#state['a'] == ", 15, "expected a value"),
        ("#state['a' == 1", 15, "expected ']'"),
        ("1 < 2 < 3", 6, "comparisons do not chain"),
        ("'open", 0, "unterminated string"),
        ("1 ? 2", 5, "expected ':'"),
        (
            "#state['a'] matches '('",
            20,
            "invalid regular expression: ",
        ),
        (
            "#state['a'] matches '(?=x)'",
            20,
            "invalid regular expression: look-around",
        ),
        (
            "#state['a'] matches 1",
            20,
            "expected a quoted regular expression",
        ),
        ("#state['a'] in {1, 2", 20, "expected ',' or '}'"),
        (
            "1 == 1 2",
            7,
            "unexpected number 2 after a complete expression",
        ),
        ("#state['a'] ~ 1", 12, "unexpected character '~'"),
        (
            "#state['a'] === 1",
            12,
            "'===' is not an operator of conditions: expected '=='",
        ),
        (
            "#state['a'] !== 1",
            12,
            "'!==' is not an operator of conditions: expected '!='",
        ),
        (
            "#state['a'] > 1 & true",
            16,
            "unexpected character '&': expected '&&' (and)",
        ),
        (
            "#state['a'] > 1 | true",
            16,
            "unexpected character '|': expected '||' (or)",
        ),
    ];
    for (src, off, msg) in cases {
        let e = parse_err(src);
        assert_eq!(e.kind, ConditionErrorKind::Syntax, "{src}: {e}");
        assert_eq!(e.offset, *off, "{src}: {e}");
        assert!(e.message.contains(msg), "{src}: {e}");
    }
}

#[test]
fn hostile_nesting_is_an_error_not_a_stack_overflow() {
    for src in [
        format!("{}true{}", "(".repeat(100_000), ")".repeat(100_000)),
        format!("{}true", "!".repeat(100_000)),
        format!("#state{}", "[#state".repeat(50_000)),
        "true ? ".repeat(50_000) + "1",
    ] {
        let err = Condition::parse(&src).unwrap_err();
        assert!(err.message.contains("nested too deeply"), "{}", err.message);
    }
    let ok = format!("{}true{}", "(".repeat(30), ")".repeat(30));
    assert!(Condition::parse(&ok).is_ok());
}

#[test]
fn long_chains_of_and_and_or_evaluate_without_a_deep_stack() {
    // Evaluated on a thread with a small stack: a chain is one node, so its length does not
    // decide how deep the evaluation recurses (a chain of 5,000 terms overflowed a runtime
    // worker's stack when it was a tree).
    let run = || {
        let all = vec!["#state['ok']"; 100_000].join(" && ");
        assert_eq!(eval(&all), Ok(true));
        let last_false = format!("{all} && #state['code'] == 0");
        assert_eq!(eval(&last_false), Ok(false));
        let any = vec!["#params['limit'] > 99"; 100_000].join(" || ") + " or #state['ok']";
        assert_eq!(eval(&any), Ok(true));
        // Short-circuit: the term after a false one is not evaluated (it would fail).
        assert_eq!(eval("false && #state['name'] > 3 && true"), Ok(false));
        assert_eq!(eval("true || #state['name'] > 3 || false"), Ok(true));
        // Mixed precedence: `&&` binds tighter than `||`.
        assert_eq!(eval("false && false || true && true"), Ok(true));
        assert_eq!(eval("true && (false || false)"), Ok(false));
    };
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
}

/// Reference §2.4: "Any string value in a State spec may contain placeholders", `if:`
/// included. A placeholder in a string literal is replaced by text; one standing alone is
/// the value, its JSON type kept. Neither is spliced into the expression's source, so a
/// parameter holding a quote cannot change the expression.
#[test]
fn placeholders_in_a_condition_read_params_and_state() {
    assert_eq!(eval("'${params.env}' == 'prod'"), Ok(true));
    assert_eq!(
        eval("#state['plan_output']['risk'] == '${params.env}'"),
        Ok(false)
    );
    assert_eq!(eval("${params.limit} > 3"), Ok(true));
    assert_eq!(eval("${state.ok}"), Ok(true));
    assert_eq!(eval("${state.plan_output.score} == 7"), Ok(true));
    assert_eq!(
        value("'env=${params.env}, n=${params.limit}'"),
        json!("env=prod, n=10")
    );
    // A missing key is the empty string, as in every template.
    assert_eq!(value("${params.missing}"), json!(""));
    assert_eq!(value("'[${state.nope}]'"), json!("[]"));
    // A `$` before a placeholder is text before its value.
    assert_eq!(value("'$${params.env}'"), json!("$prod"));
    // A parameter's quote stays in the value.
    let quoted = json!({"env": "x' or 'a' == 'a"});
    let c = Condition::parse("'${params.env}' == 'prod'").unwrap();
    assert_eq!(c.evaluate(&state(), &quoted), Ok(false));
}

#[test]
fn a_dollar_brace_that_is_not_a_placeholder_is_a_syntax_error() {
    for src in ["${HOME} == 'x'", "${params} == 1", "${ params.env } == 'x'"] {
        let e = parse_err(src);
        assert_eq!(e.kind, ConditionErrorKind::Syntax, "{src}: {e}");
        assert!(e.message.contains("${params.<key>}"), "{src}: {e}");
    }
    // An event filter reads #event only.
    let e = Condition::parse_filter("${params.env} == 'x'").unwrap_err();
    assert_eq!(e.kind, ConditionErrorKind::Sandbox, "{e}");
}
