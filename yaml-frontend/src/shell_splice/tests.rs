use serde_json::json;

use super::*;

fn render(run: &str, params: Value) -> (String, Vec<(String, String)>) {
    let command = ShellCommand::parse(run).expect("placeholders");
    let (text, env) = command.render(&params, &json!({"plan": {"risk": "high"}}));
    (text, env.into_iter().collect())
}

fn spots_of(run: &str) -> Vec<Spot> {
    ShellCommand::parse(run)
        .expect("placeholders")
        .refs
        .iter()
        .map(|r| r.spot)
        .collect()
}

fn var(n: usize, value: &str) -> (String, String) {
    (format!("MAGRATHEA_SPLICE_{n}"), value.to_string())
}

#[test]
fn a_command_without_placeholders_runs_as_written() {
    assert!(ShellCommand::parse("echo \"$HOME\" '${HOME}'").is_none());
}

#[test]
fn each_quoting_gets_the_reference_that_expands_there() {
    let (text, env) = render(
        "echo ${params.a} \"x ${params.a} y\" 'x ${state.plan.risk} y'",
        json!({"a": "v"}),
    );
    assert_eq!(
        text,
        "echo \"${MAGRATHEA_SPLICE_1}\" \"x ${MAGRATHEA_SPLICE_1} y\" \
         'x '\"${MAGRATHEA_SPLICE_2}\"' y'"
    );
    assert_eq!(env, vec![var(1, "v"), var(2, "high")]);
}

/// A `$` before a placeholder is escaped wherever the shell would join it to the reference
/// (outside quotes bash reads `$"…"` as a translated string and drops the `$`, even where
/// `sh` does not); one escaped already, or inside single quotes, is left as it is.
#[test]
fn a_dollar_before_a_placeholder_is_escaped_where_it_would_join_the_reference() {
    let (text, _) = render(
        "echo $${params.a} \"$${params.a}\" '$${params.a}' \\$${params.a} \\\\$${params.a}",
        json!({"a": "v"}),
    );
    assert_eq!(
        text,
        "echo \\$\"${MAGRATHEA_SPLICE_1}\" \"\\$${MAGRATHEA_SPLICE_1}\" \
         '$'\"${MAGRATHEA_SPLICE_1}\"'' \\$\"${MAGRATHEA_SPLICE_1}\" \
         \\\\\\$\"${MAGRATHEA_SPLICE_1}\""
    );
    let quoted = ShellRun::Quoted(Template::parse("echo $${params.a} \"$${params.a}\""));
    assert_eq!(
        quoted.render(&json!({"a": "v"}), &json!({})).0,
        "echo \\$'v' \"\\$'v'\""
    );
}

#[test]
fn values_are_the_text_the_reference_splices() {
    let (_, env) = render(
        "echo ${params.n} ${params.o} ${params.missing} ${params.null}",
        json!({"n": 3, "o": {"k": [1, true]}, "null": null}),
    );
    assert_eq!(
        env,
        vec![
            var(1, "3"),
            var(2, "{\"k\":[1,true]}"),
            var(3, ""),
            var(4, "")
        ]
    );
}

#[test]
fn escapes_and_comments_do_not_open_quotes() {
    assert_eq!(
        spots_of("echo \\' ${params.a} \\\" ${params.b}"),
        [Spot::Bare, Spot::Bare]
    );
    assert_eq!(
        spots_of("echo \"a \\\" ${params.a}\" ${params.b}"),
        [Spot::Double, Spot::Bare]
    );
    assert_eq!(
        spots_of("echo hi # it's a comment\necho ${params.a}"),
        [Spot::Bare]
    );
    assert_eq!(
        spots_of("# one\n# it's two\ncat <<E\nx\nE\n# it's three\necho ${params.a}"),
        [Spot::Bare]
    );
    // `#` inside a word starts no comment.
    assert_eq!(spots_of("echo a#'${params.a}'"), [Spot::Single]);
    // A backslash before a placeholder keeps its spot, and is marked as escaping it.
    assert_eq!(spots_of("echo \\${params.a} x"), [Spot::Bare]);
    let escaped = |run: &str| -> Vec<bool> {
        let command = ShellCommand::parse(run).expect("placeholders");
        command.refs.iter().map(|r| r.escaped).collect()
    };
    assert_eq!(
        escaped("echo \\${params.a} \\\\${params.a} \"\\${params.a}\" '\\${params.a}'"),
        [true, false, true, false]
    );
}

#[test]
fn a_command_substitution_starts_quoting_afresh() {
    assert_eq!(
        spots_of("echo \"$(cat \"${params.a}\") ${params.b}\" $(echo ${params.c})"),
        [Spot::Double, Spot::Double, Spot::Bare]
    );
}

#[test]
fn here_documents_expand_unless_their_delimiter_is_quoted() {
    assert_eq!(
        spots_of("cat <<EOF\nname: ${params.a} 'x'\nEOF\necho ${params.b}"),
        [Spot::HereDoc, Spot::Bare]
    );
    assert_eq!(
        spots_of("cat <<-\"END\" >f\n\t${params.a}\n\tEND\necho '${params.b}'"),
        [
            Spot::Unsafe("in a here-document with a quoted delimiter"),
            Spot::Single
        ]
    );
    // Two documents announced on one line follow each other.
    assert_eq!(
        spots_of("cat <<A <<'B'\n${params.a}\nA\n${params.b}\nB\n${params.c}"),
        [
            Spot::HereDoc,
            Spot::Unsafe("in a here-document with a quoted delimiter"),
            Spot::Bare
        ]
    );
    // A here-string is a word, not a document.
    assert_eq!(spots_of("cat <<< ${params.a}"), [Spot::Bare]);
}

#[test]
fn arithmetic_is_no_place_for_a_value() {
    assert_eq!(
        spots_of("echo $(( ${params.n} + 1 )) \"$((2 * ${params.n}))\" ${params.m}"),
        [
            Spot::Unsafe("inside `$((…))`"),
            Spot::Unsafe("inside `$((…))`"),
            Spot::Bare
        ]
    );
}

/// bash evaluates more than `$((…))` as arithmetic, where a value's text runs as code: a
/// substring's offset, an array subscript, `[[ … ]]`, `((…))` and `let` — quoted or not.
#[test]
fn bash_arithmetic_contexts_are_no_place_for_a_value_either() {
    let sub = Spot::Unsafe("in an array subscript or a substring offset of `${…}`");
    assert_eq!(
        spots_of("x=1; echo ${x:${params.n}} \"${a[${params.n}]}\" ${x:-${params.d}}"),
        [sub, sub, Spot::Bare]
    );
    assert_eq!(
        spots_of("[[ ${params.n} -eq 1 ]] && echo ${params.m}"),
        [Spot::Unsafe("inside `[[ … ]]`"), Spot::Bare]
    );
    assert_eq!(
        spots_of("[[ \"${params.n}\" -eq 1 ]]; (( ${params.n} )); echo ${params.m}"),
        [
            Spot::Unsafe("inside `[[ … ]]`"),
            Spot::Unsafe("inside `((…))`"),
            Spot::Bare
        ]
    );
    assert_eq!(
        spots_of("let y=${params.n}; echo ${params.m}; letter ${params.o}"),
        [
            Spot::Unsafe("in the words of `let`"),
            Spot::Bare,
            Spot::Bare
        ]
    );
    // A single bracket is `test`, whose operands are not arithmetic in dash or bash.
    assert_eq!(spots_of("[ ${params.n} -eq 1 ]"), [Spot::Bare]);
}

#[test]
fn a_placeholder_in_a_delimiter_is_refused_with_the_body() {
    assert_eq!(
        spots_of("cat <<${params.a}\n${params.b}\n"),
        [
            Spot::Unsafe("in the delimiter of a here-document"),
            Spot::Unsafe("in a here-document with a quoted delimiter")
        ]
    );
}

/// Inside backquotes quoting starts afresh, also within double quotes: a placeholder there
/// stands bare (and is quoted), and double quotes inside are the command's own.
#[test]
fn backquotes_start_their_own_quoting_inside_double_quotes() {
    assert_eq!(
        spots_of("echo \"A:`printf '%s|' ${params.v}`\""),
        [Spot::Bare]
    );
    assert_eq!(
        spots_of("echo \"C:`printf '%s|' \"${params.v}\"`\" ${params.v}"),
        [Spot::Double, Spot::Bare]
    );
    assert_eq!(
        spots_of("echo \"E:${UNSET:-`printf '%s|' ${params.v}`}\""),
        [Spot::Bare]
    );
    assert_eq!(
        spots_of("echo `echo ${params.v}` \"${params.v}\""),
        [Spot::Bare, Spot::Double]
    );
    let (text, _) = render("echo \"A:`printf '%s|' ${params.v}`\"", json!({"v": "x *"}));
    assert_eq!(text, "echo \"A:`printf '%s|' \"${MAGRATHEA_SPLICE_1}\"`\"");
}

/// A `case` pattern's `)` inside `$(…)` ends the pattern, not the command substitution.
#[test]
fn a_case_pattern_inside_a_command_substitution_does_not_close_it() {
    assert_eq!(
        spots_of("echo \"2:$(case a in a) printf '%s|' ${params.v};; esac) ${params.v}\""),
        [Spot::Bare, Spot::Double]
    );
    assert_eq!(
        spots_of(
            "x=$(case $1 in (a|b) echo ${params.v} ;; *) (cd /; echo ${params.v}) ;; esac) \"${params.v}\""
        ),
        [Spot::Bare, Spot::Bare, Spot::Double]
    );
    assert_eq!(
        spots_of("echo \"3:$(printf '%s|' \"`echo ${params.v}`\")\""),
        [Spot::Bare]
    );
}

/// A here-document inside `$(…)` or backquotes is a here-document: its value is spliced
/// unquoted, as the body takes it.
#[test]
fn a_here_document_inside_a_command_substitution_is_one() {
    assert_eq!(
        spots_of("x=$(cat <<EOF\n${params.v}\nEOF\n)\necho ${params.v}"),
        [Spot::HereDoc, Spot::Bare]
    );
    assert_eq!(
        spots_of("x=`cat <<EOF\n${params.v}\nEOF\n`"),
        [Spot::HereDoc]
    );
}

/// In the pattern of `${X#…}`, `${X%…}` or `${X/…}` an unquoted value would match as a
/// pattern: it is quoted there, within double quotes too; in the word of `${X:-…}` it is
/// spliced as around it; quotes inside start afresh.
#[test]
fn a_placeholder_in_a_parameter_expansion_is_quoted_where_it_would_be_a_pattern() {
    assert_eq!(
        spots_of("echo \"${X#${params.v}}\" \"${X%%${params.v}}\" \"${X/${params.v}/y}\""),
        [Spot::Bare, Spot::Bare, Spot::Bare]
    );
    assert_eq!(
        spots_of("echo \"${X:-${params.v}}\" ${X:-${params.v}} \"${#X}${params.v}\""),
        [Spot::Double, Spot::Bare, Spot::Double]
    );
    assert_eq!(
        spots_of("echo \"${X#\"${params.v}\"}\" ${params.v}"),
        [Spot::Double, Spot::Bare]
    );
    assert_eq!(spots_of("echo \"${X:-${Y:-${params.v}}}\""), [Spot::Double]);
}
