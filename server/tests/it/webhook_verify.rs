//! Webhook deliveries are verified as `docs/webhooks.md` promises: HMAC-SHA256 signatures
//! (GitHub's and the timestamped scheme Stripe signs with), secret rotation, dedupe keys, what
//! the run receives, and a stable reason for every refusal.

use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use magrathea_server::webhook::{
    Accepted, Incoming, MAX_DEDUPE_KEY_LEN, Rejection, check_path_token, dedupe_window_ms,
    path_token_hash, sign, verify,
};
use magrathea_yaml::schema::WebhookConfig;
use serde_json::{Value, json};

/// 2023-11-14T22:13:20Z, in milliseconds.
const NOW_MS: i64 = 1_700_000_000_000;
const NOW_S: i64 = NOW_MS / 1000;

/// A block read from YAML and checked, as the trigger service reads it.
fn config(yaml: &str) -> WebhookConfig {
    let cfg: WebhookConfig = serde_yaml_ng::from_str(yaml).expect("the block reads");
    cfg.check().expect("the block checks");
    cfg
}

const GITHUB: &str = "tokenSetting: webhooks.github.path
signature:
  secretSetting: webhooks.github.secret
  header: X-Hub-Signature-256
  prefix: \"sha256=\"
";

const STRIPE_LIKE: &str = "tokenSetting: webhooks.pay.path
signature:
  secretSetting: webhooks.pay.secret
  header: X-Signature
  timestampHeader: X-Webhook-Timestamp
  tolerance: 300s
";

fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    map
}

fn post(
    cfg: &WebhookConfig,
    secrets: &[&str],
    h: &HeaderMap,
    body: &[u8],
) -> Result<Accepted, Rejection> {
    let secrets: Vec<String> = secrets.iter().map(|s| (*s).to_owned()).collect();
    verify(
        cfg,
        &secrets,
        &Incoming {
            method: &Method::POST,
            headers: h,
            body,
            now_unix_ms: NOW_MS,
        },
    )
}

#[test]
fn githubs_documented_example_signature_verifies() {
    let cfg = config(GITHUB);
    let expected = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17";
    assert_eq!(
        sign("It's a Secret to Everybody", None, b"Hello, World!", &cfg),
        expected
    );
    let h = headers(&[("X-Hub-Signature-256", expected)]);
    let accepted = post(&cfg, &["It's a Secret to Everybody"], &h, b"Hello, World!").unwrap();
    assert_eq!(accepted.params_payload, Some(json!("Hello, World!")));
    assert_eq!(accepted.dedupe_key, None);
}

#[test]
fn a_wrong_signature_or_a_changed_body_is_refused() {
    let cfg = config(GITHUB);
    let body = br#"{"action":"opened"}"#;
    let wrong = sign("another secret", None, body, &cfg);
    assert_eq!(
        post(
            &cfg,
            &["s3cret"],
            &headers(&[("X-Hub-Signature-256", &wrong)]),
            body
        ),
        Err(Rejection::BadSignature)
    );
    let right = sign("s3cret", None, body, &cfg);
    assert_eq!(
        post(
            &cfg,
            &["s3cret"],
            &headers(&[("X-Hub-Signature-256", &right)]),
            br#"{"action":"closed"}"#
        ),
        Err(Rejection::BadSignature)
    );
    assert!(
        post(
            &cfg,
            &["s3cret"],
            &headers(&[("X-Hub-Signature-256", &right)]),
            body
        )
        .is_ok()
    );
}

#[test]
fn a_missing_signature_header_is_refused() {
    let cfg = config(GITHUB);
    let body = b"{}";
    let sig = sign("s3cret", None, body, &cfg);
    let elsewhere = headers(&[("X-Signature-256", &sig)]);
    assert_eq!(
        post(&cfg, &["s3cret"], &elsewhere, body),
        Err(Rejection::MissingSignature)
    );
}

#[test]
fn every_active_secret_verifies_and_a_removed_one_does_not() {
    let cfg = config(GITHUB);
    let body = b"{\"n\":1}";
    let by_old = headers(&[("X-Hub-Signature-256", &sign("old-secret", None, body, &cfg))]);
    let by_new = headers(&[("X-Hub-Signature-256", &sign("new-secret", None, body, &cfg))]);
    let rotating = ["old-secret", "new-secret"];
    assert!(post(&cfg, &rotating, &by_old, body).is_ok());
    assert!(post(&cfg, &rotating, &by_new, body).is_ok());
    assert_eq!(
        post(&cfg, &["new-secret"], &by_old, body),
        Err(Rejection::BadSignature)
    );
    assert!(post(&cfg, &["new-secret"], &by_new, body).is_ok());
}

#[test]
fn no_secret_refuses_even_a_request_signed_with_the_empty_key() {
    let cfg = config(GITHUB);
    let body = b"{}";
    let h = headers(&[("X-Hub-Signature-256", &sign("", None, body, &cfg))]);
    assert_eq!(post(&cfg, &[], &h, body), Err(Rejection::NoSecret));
    assert_eq!(post(&cfg, &["", ""], &h, body), Err(Rejection::NoSecret));
}

#[test]
fn the_configured_prefix_is_required() {
    let cfg = config(GITHUB);
    let body = b"{}";
    let with = sign("s3cret", None, body, &cfg);
    let bare = with.strip_prefix("sha256=").unwrap();
    assert_eq!(
        post(
            &cfg,
            &["s3cret"],
            &headers(&[("X-Hub-Signature-256", bare)]),
            body
        ),
        Err(Rejection::BadSignature)
    );
    let other = format!("sha1={bare}");
    assert_eq!(
        post(
            &cfg,
            &["s3cret"],
            &headers(&[("X-Hub-Signature-256", &other)]),
            body
        ),
        Err(Rejection::BadSignature)
    );
}

#[test]
fn hex_signatures_verify_in_either_case_and_malformed_hex_is_refused() {
    let cfg = config(GITHUB);
    let body = b"payload";
    let lower = sign("s3cret", None, body, &cfg);
    let hex = lower.strip_prefix("sha256=").unwrap();
    assert_eq!(hex, hex.to_ascii_lowercase(), "sign writes lower-case hex");
    let upper = format!("sha256={}", hex.to_ascii_uppercase());
    assert!(
        post(
            &cfg,
            &["s3cret"],
            &headers(&[("X-Hub-Signature-256", &lower)]),
            body
        )
        .is_ok()
    );
    assert!(
        post(
            &cfg,
            &["s3cret"],
            &headers(&[("X-Hub-Signature-256", &upper)]),
            body
        )
        .is_ok()
    );
    for malformed in [
        format!("sha256={}", &hex[..63]),
        format!("sha256={}zz", &hex[..62]),
        format!("sha256={}", &hex[..62]),
        "sha256=".to_owned(),
    ] {
        assert_eq!(
            post(
                &cfg,
                &["s3cret"],
                &headers(&[("X-Hub-Signature-256", &malformed)]),
                body
            ),
            Err(Rejection::BadSignature),
            "{malformed}"
        );
    }
}

#[test]
fn base64_signatures_verify_against_an_independent_hmac() {
    let cfg = config(
        "tokenSetting: a.b\nsignature: {secretSetting: a.s, header: X-Shopify-Hmac-Sha256, encoding: base64}\n",
    );
    let body = br#"{"a":1}"#;
    // `printf '{"a":1}' | openssl dgst -sha256 -hmac shopify-secret -binary | base64`
    let expected = "JnEhX0rt/Fj2WgHCczMCeczgb40j2odCSbiN0m1odHg=";
    assert_eq!(sign("shopify-secret", None, body, &cfg), expected);
    let ok = headers(&[("X-Shopify-Hmac-Sha256", expected)]);
    assert!(post(&cfg, &["shopify-secret"], &ok, body).is_ok());
    // Hex where base64 is configured: valid base64 text, but 48 bytes instead of 32.
    let hex_instead = "c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925";
    for bad in [hex_instead, "not base64!", &expected[..40]] {
        assert_eq!(
            post(
                &cfg,
                &["shopify-secret"],
                &headers(&[("X-Shopify-Hmac-Sha256", bad)]),
                body
            ),
            Err(Rejection::BadSignature),
            "{bad}"
        );
    }
}

#[test]
fn a_timestamped_signature_covers_the_timestamp_and_the_body() {
    let cfg = config(STRIPE_LIKE);
    let body = br#"{"id":"evt_1"}"#;
    // `printf '1700000000.{"id":"evt_1"}' | openssl dgst -sha256 -hmac whsec_test`
    let expected = "c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925";
    assert_eq!(sign("whsec_test", Some(NOW_S), body, &cfg), expected);
    let ok = headers(&[
        ("X-Signature", expected),
        ("X-Webhook-Timestamp", &NOW_S.to_string()),
    ]);
    assert!(post(&cfg, &["whsec_test"], &ok, body).is_ok());
    // The same signature with another timestamp: the timestamp is part of the signed text.
    let moved = headers(&[
        ("X-Signature", expected),
        ("X-Webhook-Timestamp", &(NOW_S - 1).to_string()),
    ]);
    assert_eq!(
        post(&cfg, &["whsec_test"], &moved, body),
        Err(Rejection::BadSignature)
    );
    // A signature of the body alone does not verify either.
    let body_only = headers(&[
        ("X-Signature", &sign("whsec_test", None, body, &cfg)),
        ("X-Webhook-Timestamp", &NOW_S.to_string()),
    ]);
    assert_eq!(
        post(&cfg, &["whsec_test"], &body_only, body),
        Err(Rejection::BadSignature)
    );
}

fn stamped(cfg: &WebhookConfig, ts: i64, body: &[u8]) -> HeaderMap {
    headers(&[
        ("X-Signature", &sign("whsec_test", Some(ts), body, cfg)),
        ("X-Webhook-Timestamp", &ts.to_string()),
    ])
}

#[test]
fn a_timestamp_within_the_tolerance_either_way_is_accepted() {
    let cfg = config(STRIPE_LIKE);
    for ts in [NOW_S, NOW_S - 300, NOW_S + 300, NOW_S - 1, NOW_S + 299] {
        assert!(
            post(&cfg, &["whsec_test"], &stamped(&cfg, ts, b"x"), b"x").is_ok(),
            "{ts}"
        );
    }
}

#[test]
fn a_timestamp_beyond_the_tolerance_either_way_is_expired() {
    let cfg = config(STRIPE_LIKE);
    for ts in [NOW_S - 301, NOW_S + 301, NOW_S - 86_400, 0] {
        assert_eq!(
            post(&cfg, &["whsec_test"], &stamped(&cfg, ts, b"x"), b"x"),
            Err(Rejection::ExpiredTimestamp),
            "{ts}"
        );
    }
    let tight = config(&STRIPE_LIKE.replace("tolerance: 300s", "tolerance: 10s"));
    assert_eq!(
        post(
            &tight,
            &["whsec_test"],
            &stamped(&tight, NOW_S - 11, b"x"),
            b"x"
        ),
        Err(Rejection::ExpiredTimestamp)
    );
}

#[test]
fn an_old_timestamp_with_a_forged_signature_is_a_bad_signature() {
    let cfg = config(STRIPE_LIKE);
    let forged = headers(&[
        (
            "X-Signature",
            &sign("guess", Some(NOW_S - 3600), b"x", &cfg),
        ),
        ("X-Webhook-Timestamp", &(NOW_S - 3600).to_string()),
    ]);
    assert_eq!(
        post(&cfg, &["whsec_test"], &forged, b"x"),
        Err(Rejection::BadSignature)
    );
}

#[test]
fn a_missing_or_unparsable_timestamp_is_refused() {
    let cfg = config(STRIPE_LIKE);
    let sig = sign("whsec_test", Some(NOW_S), b"x", &cfg);
    assert_eq!(
        post(
            &cfg,
            &["whsec_test"],
            &headers(&[("X-Signature", &sig)]),
            b"x"
        ),
        Err(Rejection::MissingTimestamp)
    );
    for bad in [
        "",
        "soon",
        "1700000000.5",
        "-1700000000",
        "+1700000000",
        "1e9",
        "99999999999999999999",
    ] {
        let h = headers(&[("X-Signature", &sig), ("X-Webhook-Timestamp", bad)]);
        assert_eq!(
            post(&cfg, &["whsec_test"], &h, b"x"),
            Err(Rejection::BadTimestamp),
            "{bad:?}"
        );
    }
}

const DEDUPE_BY_HEADER: &str = "tokenSetting: a.b\ndedupe: {header: X-GitHub-Delivery}\n";
const DEDUPE_BY_POINTER: &str = "tokenSetting: a.b\ndedupe: {pointer: /delivery/id, window: 10m}\n";

#[test]
fn the_dedupe_key_comes_from_the_configured_header() {
    let cfg = config(DEDUPE_BY_HEADER);
    let h = headers(&[("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")]);
    let accepted = post(&cfg, &[], &h, b"{}").unwrap();
    assert_eq!(
        accepted.dedupe_key.as_deref(),
        Some("72d3162e-cc78-11e3-81ab-4c9367dc0958")
    );
    for missing in [headers(&[]), headers(&[("X-GitHub-Delivery", "")])] {
        assert_eq!(
            post(&cfg, &[], &missing, b"{}"),
            Err(Rejection::MissingDedupeKey)
        );
    }
}

#[test]
fn the_dedupe_key_comes_from_a_string_or_number_at_the_json_pointer() {
    let cfg = config(DEDUPE_BY_POINTER);
    let none = headers(&[]);
    let by_string = post(&cfg, &[], &none, br#"{"delivery":{"id":"d-17"}}"#).unwrap();
    assert_eq!(by_string.dedupe_key.as_deref(), Some("d-17"));
    let by_number = post(&cfg, &[], &none, br#"{"delivery":{"id":4711}}"#).unwrap();
    assert_eq!(by_number.dedupe_key.as_deref(), Some("4711"));
    for body in [
        &br#"{"delivery":{}}"#[..],
        br#"{"delivery":{"id":true}}"#,
        br#"{"delivery":{"id":{"n":1}}}"#,
        br#"{"delivery":{"id":""}}"#,
        b"delivery id d-17, not JSON",
        b"",
    ] {
        assert_eq!(
            post(&cfg, &[], &none, body),
            Err(Rejection::MissingDedupeKey),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
}

#[test]
fn a_long_dedupe_key_is_kept_as_its_sha256() {
    let cfg = config(DEDUPE_BY_HEADER);
    let exactly = "k".repeat(MAX_DEDUPE_KEY_LEN);
    let kept = post(&cfg, &[], &headers(&[("X-GitHub-Delivery", &exactly)]), b"").unwrap();
    assert_eq!(kept.dedupe_key.as_deref(), Some(exactly.as_str()));
    let long_a = format!("{exactly}a");
    let long_b = format!("{exactly}b");
    let a = post(&cfg, &[], &headers(&[("X-GitHub-Delivery", &long_a)]), b"").unwrap();
    let b = post(&cfg, &[], &headers(&[("X-GitHub-Delivery", &long_b)]), b"").unwrap();
    let a = a.dedupe_key.unwrap();
    assert_eq!(a, format!("sha256:{}", path_token_hash(&long_a)));
    assert!(a.len() <= MAX_DEDUPE_KEY_LEN);
    assert_ne!(Some(a), b.dedupe_key, "different long keys stay different");
}

#[test]
fn the_dedupe_window_is_the_blocks_or_300_seconds() {
    assert_eq!(dedupe_window_ms(&config(DEDUPE_BY_POINTER)), 600_000);
    assert_eq!(dedupe_window_ms(&config(DEDUPE_BY_HEADER)), 300_000);
    assert_eq!(dedupe_window_ms(&config("tokenSetting: a.b\n")), 300_000);
}

#[test]
fn selected_headers_reach_the_run_under_lower_cased_names() {
    let cfg = config("tokenSetting: a.b\nheaders: [X-GitHub-Event, X-Absent, Accept]\n");
    let h = headers(&[
        ("X-GitHub-Event", "pull_request"),
        ("Accept", "text/plain"),
        ("Accept", "application/json"),
        ("Authorization", "Bearer not-for-the-run"),
    ]);
    let accepted = post(&cfg, &[], &h, b"").unwrap();
    let expected =
        json!({ "x-github-event": "pull_request", "accept": "text/plain, application/json" });
    assert_eq!(Value::Object(accepted.headers), expected);
}

#[test]
fn the_payload_is_parsed_json_or_the_body_as_text_or_absent() {
    let cfg = config("tokenSetting: a.b\n");
    let none = headers(&[]);
    let json_body = post(&cfg, &[], &none, br#"{"pull_request":{"number":7}}"#).unwrap();
    assert_eq!(
        json_body.params_payload,
        Some(json!({ "pull_request": { "number": 7 } }))
    );
    let form = post(&cfg, &[], &none, b"a=1&b=2").unwrap();
    assert_eq!(form.params_payload, Some(json!("a=1&b=2")));
    let binary = post(&cfg, &[], &none, b"ok\xff").unwrap();
    assert_eq!(binary.params_payload, Some(json!("ok\u{fffd}")));
    let empty = post(&cfg, &[], &none, b"").unwrap();
    assert_eq!(empty.params_payload, None);
    assert!(empty.headers.is_empty());
}

#[test]
fn only_post_is_accepted() {
    let cfg = config("tokenSetting: a.b\n");
    for method in [
        Method::GET,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::HEAD,
    ] {
        let got = verify(
            &cfg,
            &[],
            &Incoming {
                method: &method,
                headers: &HeaderMap::new(),
                body: b"",
                now_unix_ms: NOW_MS,
            },
        );
        assert_eq!(got, Err(Rejection::Method), "{method}");
    }
}

#[test]
fn a_body_over_max_body_bytes_is_refused_before_its_signature() {
    let cfg = config(&format!("{GITHUB}maxBodyBytes: 16\n"));
    let fits = [b'x'; 16];
    let h = headers(&[("X-Hub-Signature-256", &sign("s", None, &fits, &cfg))]);
    assert!(post(&cfg, &["s"], &h, &fits).is_ok());
    let over = [b'x'; 17];
    let h = headers(&[("X-Hub-Signature-256", &sign("s", None, &over, &cfg))]);
    assert_eq!(post(&cfg, &["s"], &h, &over), Err(Rejection::TooLarge));
    let default = config("tokenSetting: a.b\n");
    let big = vec![b' '; 1024 * 1024 + 1];
    assert_eq!(
        post(&default, &[], &headers(&[]), &big),
        Err(Rejection::TooLarge)
    );
}

#[test]
fn without_a_signature_block_no_signature_is_asked_for() {
    let cfg = config("tokenSetting: a.b\n");
    assert!(post(&cfg, &[], &headers(&[]), b"{}").is_ok());
}

#[test]
fn each_rejection_has_a_stable_reason_a_status_and_a_coded_message() {
    let table = [
        (Rejection::Method, "method_not_allowed", 405, "MAG-WH001"),
        (Rejection::TooLarge, "body_too_large", 413, "MAG-WH002"),
        (
            Rejection::MissingSignature,
            "missing_signature",
            401,
            "MAG-WH003",
        ),
        (Rejection::BadSignature, "bad_signature", 401, "MAG-WH004"),
        (
            Rejection::MissingTimestamp,
            "missing_timestamp",
            401,
            "MAG-WH005",
        ),
        (Rejection::BadTimestamp, "bad_timestamp", 401, "MAG-WH006"),
        (
            Rejection::ExpiredTimestamp,
            "expired_timestamp",
            401,
            "MAG-WH007",
        ),
        (
            Rejection::MissingDedupeKey,
            "missing_dedupe_key",
            400,
            "MAG-WH008",
        ),
        (Rejection::NoSecret, "no_secret", 401, "MAG-WH009"),
    ];
    for (rejection, reason, status, code) in table {
        assert_eq!(rejection.reason(), reason);
        assert_eq!(rejection.status(), StatusCode::from_u16(status).unwrap());
        let message = rejection.message();
        assert!(message.starts_with(&format!("[{code}] ")), "{message}");
        assert!(
            magrathea_core::codes::lookup(code).is_some(),
            "{code} is registered"
        );
        assert_eq!(rejection.to_string(), message);
    }
}

#[test]
fn the_store_keeps_the_sha256_of_a_path_token() {
    assert_eq!(
        path_token_hash("abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    let token = "tok_0123456789abcdef0123456789abcdef";
    assert!(!path_token_hash(token).contains(token));
}

#[test]
fn a_path_token_must_be_long_and_url_safe() {
    check_path_token(&"a1_-".repeat(8)).unwrap();
    let short = check_path_token(&"a".repeat(31)).unwrap_err();
    assert!(
        short.starts_with("[MAG-WH011]") && short.contains("expected 32 to 256"),
        "{short}"
    );
    // One message whatever is wrong: the setting may be the tenant's, which a project's
    // writers may not read, so neither its length nor its characters are told.
    let long = check_path_token(&"a".repeat(257)).unwrap_err();
    let slash = check_path_token(&format!("{}/x", "a".repeat(40))).unwrap_err();
    assert_eq!(long, short);
    assert_eq!(slash, short);
    assert!(!short.contains("31"), "{short}");
}
