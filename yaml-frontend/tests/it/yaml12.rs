//! The YAML reader: YAML 1.2 semantics (cross-checked against serde_yaml_ng), limits,
//! aliases and syntax-error positions.

use magrathea_yaml::{Code, LoadOptions, YamlKind, load_workflow, parse_yaml};
use serde_json::{Value, json};

/// The first diagnostic of reading `text` as `t.yaml` (empty when it reads).
fn first(text: &str) -> String {
    parse_yaml("t.yaml", text, &LoadOptions::default())
        .err()
        .and_then(|d| d.iter().next().map(ToString::to_string))
        .unwrap_or_default()
}

fn read(text: &str) -> Value {
    parse_yaml("t.yaml", text, &LoadOptions::default())
        .map(|n| n.to_json())
        .unwrap_or_else(|d| panic!("{d}"))
}

#[test]
fn on_off_yes_no_stay_strings_as_keys_and_values() {
    let v = read("on: off\nyes: no\ny: n\nOn: true\nflag: FALSE\n");
    assert_eq!(
        v,
        json!({"on": "off", "yes": "no", "y": "n", "On": true, "flag": false})
    );
    let node = parse_yaml("t.yaml", "on:\n  success: x\n", &LoadOptions::default());
    let key = node
        .ok()
        .and_then(|n| n.as_map().map(|m| m[0].0.kind.clone()));
    assert_eq!(key, Some(YamlKind::Str("on".into())));
}

#[test]
fn transition_block_named_on_is_read_as_on() {
    // A DECISION gate, so that `yes` is an outcome its state can end with.
    let text = "start: a\nstates:\n  a:\n    type: gate_task\n    inbox: { kind: DECISION, options: [yes, no] }\n    on:\n      yes: b\n  b:\n    type: terminal\n";
    let doc = load_workflow("t.yaml", text, &LoadOptions::default()).map(|l| l.doc);
    let doc = doc.unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(doc.states["a"].on[0].outcome, "yes");
    assert_eq!(doc.states["a"].on[0].target, "b");
}

/// Documents on which the span reader and serde_yaml_ng must agree exactly.
const AGREEMENT: &[&str] = &[
    "a: true\nb: false\nc: True\nd: FALSE\n",
    "on: 1\noff: 2\nyes: 3\nno: 4\n",
    "v: [yes, no, on, off, y, n, Yes, NO]\n",
    "i: 42\nneg: -7\nf: 1.5\ne: 1e3\nhalf: .5\nbig: 9007199254740993\n",
    "n1: null\nn2: ~\nn3:\nn4: Null\n",
    "s1: 'true'\ns2: \"42\"\ns3: '~'\ns4: \"null\"\ns5: 'it''s'\ns6: \"tab\\there\"\n",
    "outer:\n  inner:\n    list: [1, {k: v}, [x, y]]\n    flow: {a: 1, b: [true, 'false']}\n",
    "block: |\n  line one\n  line two\nfolded: >\n  a\n  b\n",
    "version: \"1\"\nplain: 1.0\nstr: 1.0.0\nurl: http://x/y?z=1\n",
    "anchor: &a {x: 1}\ncopy: *a\n",
];

#[test]
fn span_reader_agrees_with_serde_yaml_ng() {
    for text in AGREEMENT {
        let ours = read(text);
        let theirs: Value = serde_yaml_ng::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(ours, theirs, "disagreement on {text:?}");
    }
}

#[test]
fn reference_fixture_agrees_with_serde_yaml_ng() {
    let text = include_str!("../fixtures/pr-review.yaml");
    let theirs: Value = serde_yaml_ng::from_str(text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(read(text), theirs);
    assert!(theirs["states"]["plan"]["on"].is_object());
}

#[test]
fn nodes_carry_positions() {
    let node = parse_yaml("t.yaml", "a:\n  b: [1, 'x']\n", &LoadOptions::default());
    let node = node.unwrap_or_else(|d| panic!("{d}"));
    let b = node.get("a").and_then(|a| a.get("b"));
    let items = b.and_then(|b| b.as_seq()).unwrap_or_default();
    assert_eq!(b.map(|b| b.span.to_string()), Some("2:6".to_owned()));
    assert_eq!(items[1].span.to_string(), "2:10");
    assert_eq!(
        items[1].content.map(|c| c.to_string()),
        Some("2:11".to_owned())
    );
}

#[test]
fn syntax_errors_report_parser_position() {
    let err = parse_yaml("t.yaml", "a: 1\nb: [1, 2\nc: 3\n", &LoadOptions::default());
    let d = err
        .err()
        .and_then(|d| d.iter().next().cloned())
        .map(|d| (d.code, d.line));
    assert_eq!(d.map(|(c, _)| c), Some(Code::Syntax));
    let err = parse_yaml("t.yaml", "key: \"unterminated\n", &LoadOptions::default());
    let msg = err.err().map(|d| d.to_string()).unwrap_or_default();
    assert!(
        msg.starts_with("t.yaml:1:6: [MAG-Y001] invalid YAML: "),
        "{msg}"
    );
    assert!(msg.contains("quoted scalar"), "{msg}");
    let tab = parse_yaml("t.yaml", "a:\n\tb: 1\n", &LoadOptions::default());
    let msg = tab.err().map(|d| d.to_string()).unwrap_or_default();
    assert!(
        msg.starts_with("t.yaml:2:1: [MAG-Y001] invalid YAML: a tab character"),
        "{msg}"
    );
}

/// Where the scanner gives up is not always where the mistake is: a tab after a scalar is
/// found only when the scanner looks for the scalar's next line, and an unclosed `[` only at
/// the end of the text. The position is the mistake's.
#[test]
fn syntax_errors_point_at_the_tab_or_the_unclosed_bracket() {
    let msg = first("a:\n  b: success\n\tc: x\n");
    assert!(
        msg.starts_with("t.yaml:3:1: [MAG-Y001] invalid YAML: a tab character"),
        "{msg}"
    );
    let msg = first("a: 1\nb: [unclosed\n");
    assert!(
        msg.starts_with("t.yaml:2:4: [MAG-Y001] invalid YAML: ")
            && msg.contains("this `[` is not closed"),
        "{msg}"
    );
    // Brackets in quotes and comments are not openers; a closed one is not either. A `}`
    // that closes a `[` is the mistake.
    let msg = first("a: \"[\" # [\nb: [x]\nc: {k: [1, 2}\n");
    assert!(msg.starts_with("t.yaml:3:13: "), "{msg}");
    assert!(
        msg.contains("this bracket closes a `[`: expected `]`"),
        "{msg}"
    );
    // The next key's `:` inside an unclosed `[` is where the scanner trips; the `[` is named.
    let msg = first("tags: [x, y\nstart: d\n");
    assert!(
        msg.starts_with("t.yaml:1:7: ") && msg.contains("this `[` is not closed by a `]`"),
        "{msg}"
    );
    // So is a `[` left open with more lines after it (the scanner trips over their
    // indentation).
    let msg = first("start: a\nstates:\n  a:\n    type: terminal\n    outcome: [success\n  b: x\n");
    assert!(
        msg.starts_with("t.yaml:5:14: ") && msg.contains("this `[` is not closed by a `]`"),
        "{msg}"
    );
    // A tab that indents a key, at the tab.
    let msg = first("start: a\nstates:\n\ta: x\n");
    assert!(
        msg.starts_with("t.yaml:3:1: [MAG-Y001] invalid YAML: a tab character"),
        "{msg}"
    );
    // A key indented under a plain value says what was expected.
    let msg = first("start: a\n  states: x\n");
    assert!(
        msg.starts_with("t.yaml:2:9: ") && msg.contains("expected this key at the indentation"),
        "{msg}"
    );
    // A key indented between its siblings and its parent names the indentations it could
    // have.
    let msg = first("start: done\nstates:\n  done:\n    type: terminal\n   outcome: success\n");
    assert!(
        msg.starts_with("t.yaml:5:4: ")
            && msg.contains(
                "this line is indented by 3 spaces, which matches no mapping above it: \
                 expected 4 (beside `type`), 2 (beside `done`) or 0 (beside `states`)"
            ),
        "{msg}"
    );
    // Under a list item, a key's indentation is where the item's first key begins.
    let msg = first(
        "start: a\nstates:\n  a:\n    type: condition_task\n    transitions:\n      - if: \"#params['x'] == 1\"\n         to: b\n      - else: b\n",
    );
    assert!(
        msg.contains("indented by 9 spaces") && msg.contains("expected 8 (beside `if`), 4"),
        "{msg}"
    );
    // ... and a key at the column of the item's `-` is said to be one or the other.
    let msg = first(
        "start: a\nstates:\n  a:\n    type: condition_task\n    transitions:\n      - if: \"#params['x'] == 1\"\n      to: b\n      - else: b\n",
    );
    assert_eq!(
        msg,
        "t.yaml:7:7: [MAG-Y001] invalid YAML: `to:` stands at the column of the `-` of the list \
         item above, where YAML expects another item: expected it indented by 8 (beside `if`) \
         to belong to that item, or `- to:` to start an item of its own"
    );
    // A `[` left open at the end of the text is named.
    let msg = first("start: [\n");
    assert!(
        msg.starts_with("t.yaml:1:8: ") && msg.contains("this `[` is not closed by a `]`"),
        "{msg}"
    );
    // An unclosed quote says what was expected, where it opens.
    let msg = first("a:\n  b: \"abc\n");
    assert!(msg.starts_with("t.yaml:2:6: "), "{msg}");
    assert!(msg.contains("expected a closing quote"), "{msg}");
    // ... and so does one that the next key's line runs into, never closed at all,
    let msg = first("start: \"a\nstates: {}\n");
    assert!(msg.starts_with("t.yaml:1:8: "), "{msg}");
    assert!(
        msg.contains("the quoted text that starts here is never closed: expected a closing `\"`"),
        "{msg}"
    );
    let msg = first("start: 'it''s\nstates: {}\n");
    assert!(
        msg.contains("never closed: expected a closing `'`"),
        "{msg}"
    );
    // ... or closed on a line not indented under its key.
    let msg = first("start: \"a\nb\"\nstates: {}\n");
    assert!(msg.starts_with("t.yaml:1:8: "), "{msg}");
    assert!(
        msg.contains("expected the closing quote of the quoted text that starts here"),
        "{msg}"
    );
    // A key glued to its value is named at its colon, wherever the parser noticed.
    for (doc, at) in [
        (
            "start: a\nstates:\n  a:\n    type: terminal\n    outcome:success\n  b:\n    type: terminal\n",
            "5:12",
        ),
        (
            "start: a\nstates:\n  a:\n    outcome:success\n    type: terminal\n",
            "4:12",
        ),
        ("start:a\nstates:\n  a:\n    type: terminal\n", "1:6"),
    ] {
        let msg = first(doc);
        assert!(msg.starts_with(&format!("t.yaml:{at}: ")), "{msg}");
        assert!(msg.contains("is not followed by a space"), "{msg}");
    }
    // A tab after a key's colon is named at the tab.
    let msg = first("start: a\nstates:\n  a:\n    type:\tterminal\n");
    assert!(msg.starts_with("t.yaml:4:10: "), "{msg}");
    assert!(msg.contains("a tab after `:`"), "{msg}");
    // A mapping's line without a colon is named.
    let msg = first(
        "start: a\nstates:\n  a:\n    type: terminal\n    outcome success\n  b:\n    type: terminal\n",
    );
    assert!(msg.starts_with("t.yaml:5:5: "), "{msg}");
    assert!(msg.contains("has no `:`: expected `key: value`"), "{msg}");
    // Also when a `key: value` follows it, which the parser reads as its continuation, and
    // for a state's name without its colon.
    for (doc, at) in [
        (
            "start: a\nstates:\n  a:\n    type terminal\n    outcome: success\n",
            "4:5",
        ),
        ("start: a\nstates:\n  a\n    type: terminal\n", "3:3"),
    ] {
        let msg = first(doc);
        assert!(msg.starts_with(&format!("t.yaml:{at}: ")), "{msg}");
        assert!(msg.contains("has no `:`: expected `key: value`"), "{msg}");
    }
    // A key indented under a line that has one still continues that line's value.
    let msg =
        first("start: a\nstates:\n  a:\n    type: terminal\n    result: text\n      more: x\n");
    assert!(msg.starts_with("t.yaml:6:11: "), "{msg}");
    assert!(
        msg.contains("indented further, it continues the value above"),
        "{msg}"
    );
    // A condition left unquoted is a comment: said at its `#`.
    let msg = magrathea_yaml::load_workflow(
        "t.yaml",
        "start: a\nstates:\n  a:\n    type: condition_task\n    transitions:\n      - if: #params['x'] == 1\n        to: b\n      - else: b\n  b: { type: terminal }\n",
        &LoadOptions::default(),
    )
    .err()
    .and_then(|d| d.iter().next().map(ToString::to_string))
    .unwrap_or_default();
    assert!(msg.starts_with("t.yaml:6:13: "), "{msg}");
    assert!(msg.contains("starts a YAML comment"), "{msg}");
    // A list item among a mapping's keys is named at its dash.
    let msg = first("start: a\nstates:\n  a:\n    type: terminal\n  - b\n");
    assert!(msg.starts_with("t.yaml:5:3: "), "{msg}");
    assert!(
        msg.contains("a list item (`- `) stands among the keys"),
        "{msg}"
    );
    // An alias to no anchor names the anchor it needs.
    let msg = first("start: *nope\n");
    assert!(
        msg.starts_with("t.yaml:1:8: ")
            && msg.contains("the alias `*nope` names no anchor: expected `&nope` on a value"),
        "{msg}"
    );
    // A reserved indicator at the start of a plain value asks for quotes.
    for c in ['@', '`'] {
        let msg = first(&format!("start: {c}a\n"));
        assert!(
            msg.starts_with("t.yaml:1:8: ")
                && msg.contains(&format!(
                    "'{c}' is reserved and cannot begin a plain value: expected the value quoted"
                )),
            "{msg}"
        );
    }
}

#[test]
fn size_limit() {
    let text = format!("description: \"{}\"\n", "x".repeat(200));
    let opts = LoadOptions::default().max_bytes(100);
    let err = load_workflow("big.yaml", &text, &opts)
        .err()
        .map(|d| d.to_string());
    assert_eq!(
        err.as_deref(),
        Some("big.yaml:1:1: [MAG-Y002] document is 216 bytes: expected at most 100 bytes\n")
    );
    assert!(parse_yaml("ok.yaml", &text, &LoadOptions::default()).is_ok());
}

#[test]
fn alias_bomb_is_rejected() {
    let bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n\
                b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n\
                c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n\
                d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n\
                e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]\n\
                f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]\n\
                g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]\n\
                h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]\n\
                i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]\n";
    let err = parse_yaml("bomb.yaml", bomb, &LoadOptions::default()).err();
    let d = err
        .and_then(|d| d.iter().next().cloned())
        .unwrap_or_else(|| panic!("bomb loaded"));
    assert_eq!(d.code, Code::TooComplex);
    assert!(d.message.contains("more than 100000 nodes"), "{d}");
    assert!(d.message.contains("alias bomb"), "{d}");
    assert!(d.line >= 6, "{d}");
}

/// A long document without a single alias is told its size, not sent looking for aliases.
#[test]
fn a_large_document_without_aliases_is_not_called_an_alias_bomb() {
    let text: String = (0..60_000).map(|i| format!("k{i}: v\n")).collect();
    let err = parse_yaml("long.yaml", &text, &LoadOptions::default()).err();
    let d = err
        .and_then(|d| d.iter().next().cloned())
        .unwrap_or_else(|| panic!("loaded"));
    assert_eq!(d.code, Code::TooComplex);
    assert!(d.message.contains("more than 100000 nodes"), "{d}");
    assert!(!d.message.contains("alias"), "{d}");
}

#[test]
fn deep_nesting_is_rejected() {
    let text = format!("{}{}", "[".repeat(20), "]".repeat(20));
    let err = parse_yaml("deep.yaml", &text, &LoadOptions::default().max_depth(10)).err();
    let d = err
        .and_then(|d| d.iter().next().cloned())
        .unwrap_or_else(|| panic!("loaded"));
    assert_eq!(d.code, Code::TooComplex);
    assert_eq!((d.line, d.column), (1, 11));
    assert!(parse_yaml("deep.yaml", &text, &LoadOptions::default()).is_ok());
    // Far deeper nesting is rejected (by the parser's own limit or ours), never a crash.
    let text = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    assert!(parse_yaml("deep.yaml", &text, &LoadOptions::default()).is_err());
}

#[test]
fn second_document_and_non_mapping_root() {
    let err = parse_yaml("t.yaml", "a: 1\n---\nb: 2\n", &LoadOptions::default());
    let msg = err.err().map(|d| d.to_string()).unwrap_or_default();
    assert!(msg.contains("[MAG-Y001] a second YAML document"), "{msg}");
    // The first document's own mistakes are reported with it, in one pass.
    let err = load_workflow(
        "t.yaml",
        "start: a\nstates:\n  a: { type: terminal, outcome: nope }\n---\nb: [\n",
        &LoadOptions::default(),
    );
    let msg = err.err().map(|d| d.to_string()).unwrap_or_default();
    assert!(
        msg.contains("t.yaml:3:33: [MAG-Y026] 'outcome' of state 'a'"),
        "{msg}"
    );
    assert!(
        msg.contains("t.yaml:4:1: [MAG-Y001] a second YAML document"),
        "{msg}"
    );
    let err = load_workflow("t.yaml", "- a\n- b\n", &LoadOptions::default());
    let msg = err.err().map(|d| d.to_string()).unwrap_or_default();
    assert_eq!(
        msg,
        "t.yaml:1:1: [MAG-Y007] the document root is a list: expected a mapping\n"
    );
}

#[test]
fn explicit_str_tag_keeps_text() {
    assert_eq!(
        read("a: !!str true\nb: !!str 12\n"),
        json!({"a": "true", "b": "12"})
    );
}

/// The core schema's tags decide a scalar's type, quoted or not; a tag the reader does not
/// know is an error at the node, not dropped.
#[test]
fn core_tags_type_a_scalar_and_other_tags_are_errors() {
    assert_eq!(
        read(
            "a: !!int \"7\"\nb: !!float 1\nc: !!bool \"true\"\ne: !!null \"\"\nf: ! 12\ng: !!seq [1]\n"
        ),
        json!({"a": 7, "b": 1.0, "c": true, "e": null, "f": "12", "g": [1]})
    );
    let msg = first("a: 1\nx: !custom foo\n");
    assert!(
        msg.starts_with("t.yaml:2:4: ") && msg.contains("unknown tag `!custom`"),
        "{msg}"
    );
    let msg = first("a: !!int seven\n");
    assert!(
        msg.starts_with("t.yaml:1:4: ")
            && msg.contains("`seven` is tagged !!int: expected an integer"),
        "{msg}"
    );
    let msg = first("a: !!map [1]\n");
    assert!(msg.contains("unknown tag `!!map` on a list"), "{msg}");
}

/// YAML 1.1's merge key, as the reference's SnakeYAML reads it: `<<: *base` copies the
/// anchored mapping's entries in, the mapping's own keys win, and of a list of mappings the
/// first to set a key wins.
#[test]
fn merge_keys_copy_an_anchored_mapping_and_own_keys_win() {
    let v = read(
        "base: &base { type: shell_task, dirName: workspace, timeoutSeconds: 60 }\n\
         more: &more { timeoutSeconds: 5, storeAs: out }\n\
         one:\n  <<: *base\n  timeoutSeconds: 30\n\
         two: { <<: [*more, *base], run: ls }\n",
    );
    assert_eq!(
        v["one"],
        json!({"type": "shell_task", "dirName": "workspace", "timeoutSeconds": 30})
    );
    assert_eq!(
        v["two"],
        json!({"timeoutSeconds": 5, "storeAs": "out", "type": "shell_task", "dirName": "workspace", "run": "ls"})
    );
    let e = parse_yaml("t.yaml", "a: { <<: 7 }\n", &LoadOptions::default()).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("t.yaml:1:10:")
            && text.contains("its value is an integer (7): expected an alias of a mapping"),
        "{text}"
    );
    // An item of a merged list that is no mapping is named where it stands, and the mappings
    // beside it still merge: no false "no 'type'" follows.
    let text = "x: &b {type: terminal}\nstart: a\nstates:\n  a:\n    <<: [*b, 3]\n";
    let all = load_workflow("t.yaml", text, &LoadOptions::default())
        .err()
        .map(|d| d.iter().map(ToString::to_string).collect::<Vec<_>>())
        .unwrap_or_default();
    assert!(
        all.iter().any(|d| d.starts_with(
            "t.yaml:5:14: [MAG-Y007] an item of the list '<<' merges is an integer (3): \
             expected an alias of a mapping"
        )),
        "{all:#?}"
    );
    assert!(!all.iter().any(|d| d.contains("has no 'type'")), "{all:#?}");
}

/// Only a plain `<<` is the merge key: a quoted `"<<"` (or `'<<'`) is an ordinary key.
#[test]
fn a_quoted_merge_key_is_an_ordinary_key() {
    let v = read("base: &base { a: 1 }\none: { \"<<\": *base, b: 2 }\ntwo: { '<<': x }\n");
    assert_eq!(v["one"], json!({"<<": {"a": 1}, "b": 2}));
    assert_eq!(v["two"], json!({"<<": "x"}));
    let text = "start: a\nstates:\n  a:\n    type: terminal\n    \"<<\": { outcome: failure }\n";
    let all = load_workflow("t.yaml", text, &LoadOptions::default())
        .err()
        .map(|d| d.iter().map(ToString::to_string).collect::<Vec<_>>())
        .unwrap_or_default();
    assert!(
        all.iter()
            .any(|d| d.starts_with("t.yaml:5:5: [MAG-Y005]") && d.contains("'<<'")),
        "{all:#?}"
    );
}

#[test]
fn a_workflow_shares_a_states_fields_through_a_merge_key() {
    let text = "start: a\nstates:\n  a: &step\n    type: timer_task\n    duration: 1s\n    on: { fired: b }\n  b:\n    <<: *step\n    on: { fired: c }\n  c: { type: terminal }\n";
    let doc = load_workflow("t.yaml", text, &LoadOptions::default())
        .map(|l| l.doc)
        .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(doc.states["b"].task_type.as_str(), "timer_task");
    assert_eq!(doc.states["b"].on[0].target, "c");
}

#[test]
fn a_control_character_is_refused_where_it_stands_and_an_escape_is_offered() {
    assert_eq!(
        first("a: 1\nb: \"x\u{0}y\"\n"),
        "t.yaml:2:6: [MAG-Y001] invalid YAML: the control character U+0000 is not allowed in a \
         document: expected printable text; write it as the escape \"\\x00\" inside a \
         double-quoted string"
    );
    assert!(
        first("a: b\u{7}c\n")
            .starts_with("t.yaml:1:5: [MAG-Y001] invalid YAML: the control character U+0007"),
        "{}",
        first("a: b\u{7}c\n")
    );
    assert!(
        first("a: \u{FFFF}\n").contains("\"\\uFFFF\""),
        "{}",
        first("a: \u{FFFF}\n")
    );
    // A byte-order mark is no column.
    assert!(
        first("\u{FEFF}a: b\u{1}\n").starts_with("t.yaml:1:5: "),
        "{}",
        first("\u{FEFF}a: b\u{1}\n")
    );
    // Tabs, line breaks and the printable ranges are text; so is the escape itself.
    assert_eq!(
        read("a: \"x\\x00y\"\nb: c\t\r\nd: é\u{E000}\u{1F600}\n")["a"],
        json!("x\u{0}y")
    );
}

#[test]
fn a_quote_inside_a_quoted_value_and_an_unknown_escape_say_how_to_write_them() {
    assert_eq!(
        first("a: 'it's broken'\n"),
        "t.yaml:1:8: [MAG-Y001] invalid YAML: text after the closing ' of a quoted value: \
         expected the value to end at its closing quote; a `'` inside single quotes is written \
         `''` (`'it''s'`), or the whole value quoted with the other quote"
    );
    assert!(
        first("a: \"say \"hi\" now\"\n").contains("closing \" of a quoted value"),
        "{}",
        first("a: \"say \"hi\" now\"\n")
    );
    // At the escape it does not know, not at the opening quote or a known escape before it.
    assert!(
        first("a: \"x \\t y \\q\"\n")
            .starts_with("t.yaml:1:12: [MAG-Y001] invalid YAML: unknown escape `\\q`"),
        "{}",
        first("a: \"x \\t y \\q\"\n")
    );
    assert!(
        first("a: 1\nb: \"x\\qy\"\n")
            .starts_with("t.yaml:2:6: [MAG-Y001] invalid YAML: unknown escape `\\q` in a double-quoted string: expected one of"),
        "{}",
        first("a: 1\nb: \"x\\qy\"\n")
    );
}

#[test]
fn flow_lists_nested_past_the_readers_limit_are_too_complex_as_other_nesting_is() {
    let deep = format!("a: {}{}\n", "[".repeat(5000), "]".repeat(5000));
    let d = first(&deep);
    assert!(
        d.starts_with("t.yaml:1:")
            && d.contains("[MAG-Y003]")
            && d.ends_with("expected a flatter document"),
        "{d}"
    );
}

/// A key written without quotes is read only up to 1,024 characters (YAML's limit on implicit
/// keys): a longer state name is said to be too long for a plain key, not an indentation
/// mistake.
#[test]
fn a_plain_key_past_1024_characters_is_said_to_be_too_long() {
    let name = "s".repeat(2000);
    let msg = first(&format!(
        "start: {name}\nstates:\n  {name}:\n    type: terminal\n"
    ));
    assert!(
        msg.contains("[MAG-Y001]")
            && msg.contains("a key without quotes may be at most 1024 characters"),
        "{msg}"
    );
    assert!(!msg.contains("indentation"), "{msg}");
    // Also a key at the top level and one after the state names, named where it begins.
    let key = "k".repeat(2000);
    for (doc, at) in [
        (format!("{key}: x\nstart: a\n"), "1:1"),
        (
            format!("start: a\nstates:\n  a: {{type: terminal}}\n{key}: x\n"),
            "4:1",
        ),
    ] {
        let msg = first(&doc);
        assert!(msg.starts_with(&format!("t.yaml:{at}: ")), "{msg}");
        assert!(
            msg.contains("a key without quotes may be at most 1024 characters"),
            "{msg}"
        );
    }
}

/// A mapping's line without its colon is named, also when a blank line or a comment stands
/// between it and the next key (the parser then complains of another document, or of a key it
/// did not expect, at that next key).
#[test]
fn a_line_without_its_colon_is_named_across_blank_lines_and_comments() {
    for (doc, at) in [
        (
            "start a\n# comment\nstates:\n  a: {type: terminal}\n",
            "1:1",
        ),
        ("start a\n\nstates:\n  a: {type: terminal}\n", "1:1"),
        (
            "start: a\nstates:\n  a:\n    type: terminal\n    outcome success\n\n  b:\n    type: terminal\n",
            "5:5",
        ),
        (
            "start: a\nstates:\n  a:\n    type terminal\n    # c\n    outcome: success\n",
            "4:5",
        ),
        ("start: a\nstates:\n  a\n\n    type: terminal\n", "3:3"),
    ] {
        let msg = first(doc);
        assert!(msg.starts_with(&format!("t.yaml:{at}: ")), "{doc:?}: {msg}");
        assert!(
            msg.contains("this line of a mapping has no `:`: expected `key: value`"),
            "{doc:?}: {msg}"
        );
    }
    // A list item among keys after a comment is still named as one, not as a missing colon.
    let msg = first("start: a\nstates:\n  a:\n    type: terminal\n  # c\n  - b\n");
    assert!(
        msg.contains("a list item (`- `) stands among the keys"),
        "{msg}"
    );
}

/// A document saved with old Mac line breaks (a lone carriage return) or with a byte-order mark
/// gets its mistakes placed as the same document with line feeds and no mark.
#[test]
fn lone_carriage_returns_and_a_byte_order_mark_keep_error_positions() {
    let at = |text: &str| {
        first(text)
            .split(" [")
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    for (lf, why) in [
        (
            "start: a\nstates:\n  a:\n    type: terminal\n\tx: 1\n",
            "a tab",
        ),
        (
            "start: a\nstates:\n  a:\n    type: terminal\n    x: \u{0}\n",
            "a NUL",
        ),
        (
            "start: a\nstates:\n  a: {type: terminal\n  b: 1\n",
            "an unclosed brace",
        ),
        ("a: 1\nb: 'it's'\n", "a quote"),
    ] {
        let expected = at(lf);
        assert!(!expected.ends_with("t.yaml:1:1"), "{why}: {expected}");
        assert_eq!(
            at(&lf.replace('\n', "\r")),
            expected,
            "{why} with CR breaks"
        );
        assert_eq!(
            at(&lf.replace('\n', "\r\n")),
            expected,
            "{why} with CRLF breaks"
        );
    }
    assert_eq!(
        read("a: |\r  one\r  two\rb: c\r"),
        json!({"a": "one\ntwo\n", "b": "c"})
    );
    for (plain, why) in [
        ("start: [a\nstates: {}\n", "a bracket"),
        ("start:\ta\n", "a tab"),
    ] {
        assert_eq!(
            at(&format!("\u{FEFF}{plain}")),
            at(plain),
            "{why} after a BOM"
        );
    }
}
