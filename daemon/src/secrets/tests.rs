//! Unit tests of the secret shield: detection of every built-in family,
//! shape preservation, round trips, determinism, messages, custom patterns.

use super::alphabet::{self, Alphabet};
use super::cipher::BodyCipher;
use super::*;
use serde_json::json;

const KEY: [u8; 32] = [7; 32];

/// `n` characters drawn from `chars` by a fixed LCG (varied, high entropy).
fn body(chars: &str, n: usize, seed: u64) -> String {
    let chars: Vec<char> = chars.chars().collect();
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            chars[((state >> 33) % chars.len() as u64) as usize]
        })
        .collect()
}

const ALNUM: &str = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const UPPER_DIGITS: &str = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER_DIGITS: &str = "0123456789abcdefghijklmnopqrstuvwxyz";
const HEX: &str = "0123456789abcdef";

fn shield() -> SecretShield {
    SecretShield::new(Some(&KEY), None, &[]).expect("shield")
}

/// Simple families: (pattern name, prefix, body alphabet, body length).
fn simple_families() -> Vec<(&'static str, &'static str, &'static str, usize)> {
    vec![
        ("anthropic", "sk-ant-api03-", B64URL, 93),
        ("openai", "sk-proj-", B64URL, 64),
        ("openai-legacy", "sk-", ALNUM, 48),
        ("stripe-secret-live", "sk_live_", ALNUM, 24),
        ("stripe-publish-live", "pk_live_", ALNUM, 30),
        ("stripe-secret-test", "sk_test_", ALNUM, 24),
        ("stripe-publish-test", "pk_test_", ALNUM, 24),
        ("vercel", "vercel_", B64URL, 24),
        ("gitlab", "glpat-", B64URL, 20),
        ("datadog", "ddapi_", LOWER_DIGITS, 40),
        ("pypi", "pypi-", B64URL, 60),
        ("github-pat", "ghp_", ALNUM, 36),
        ("github-oauth", "gho_", ALNUM, 36),
        ("github-user", "ghu_", ALNUM, 36),
        ("github-server", "ghs_", ALNUM, 36),
        ("github-refresh", "ghr_", ALNUM, 36),
        ("aws-access-key", "AKIA", UPPER_DIGITS, 16),
        ("google-api", "AIza", B64URL, 35),
        ("npm", "npm_", ALNUM, 36),
        ("supabase", "sbp_", HEX, 40),
        ("grafana", "glc_", B64URL, 32),
        ("huggingface", "hf_", ALNUM, 34),
        ("twilio", "SK", HEX, 32),
    ]
}

/// The pattern names `scan` finds in `text`.
fn detected(shield: &SecretShield, text: &str) -> Vec<String> {
    scan::scan(text, &shield.patterns).iter().map(|s| shield.patterns[s.pattern].name.clone()).collect()
}

/// Encrypt `token` inside a sentence and return its ciphertext.
fn ciphertext_of(shield: &mut SecretShield, token: &str) -> String {
    let encrypted = shield.encrypt_text(&format!("the key is {token} (keep it safe)"));
    assert!(!encrypted.contains(token), "{token} left in {encrypted}");
    let ct = encrypted.strip_prefix("the key is ").and_then(|s| s.strip_suffix(" (keep it safe)"));
    ct.unwrap_or_else(|| panic!("surroundings changed: {encrypted}")).to_owned()
}

#[test]
fn each_simple_family_is_replaced_by_a_token_of_the_same_shape() {
    let mut shield = shield();
    for (seed, (name, prefix, chars, len)) in simple_families().into_iter().enumerate() {
        let token = format!("{prefix}{}", body(chars, len, seed as u64));
        assert_eq!(detected(&shield, &token), [name], "{token}");
        let ct = ciphertext_of(&mut shield, &token);
        let ct_body = ct.strip_prefix(prefix).unwrap_or_else(|| panic!("{name}: prefix lost in {ct}"));
        assert_eq!(ct.chars().count(), token.chars().count(), "{name}: length changed");
        assert!(ct_body.chars().all(|c| chars.contains(c)), "{name}: {ct_body} leaves the alphabet");
        assert_ne!(ct, token);
        assert_eq!(detected(&shield, &ct), [name], "{name}: ciphertext {ct} no longer looks like one");
        assert_eq!(shield.decrypt_text(&ct), token);
    }
}

#[test]
fn slack_tokens_keep_prefix_separators_and_segment_alphabets() {
    let mut shield = shield();
    for (name, prefix) in [("slack-bot", "xoxb-"), ("slack-user", "xoxp-")] {
        let token =
            format!("{prefix}{}-{}-{}", body("0123456789", 12, 1), body("0123456789", 13, 2), body(ALNUM, 24, 3));
        assert_eq!(detected(&shield, &token), [name]);
        let ct = ciphertext_of(&mut shield, &token);
        assert!(ct.starts_with(prefix), "{ct}");
        let plain_parts: Vec<&str> = token[prefix.len()..].split('-').collect();
        let ct_parts: Vec<&str> = ct[prefix.len()..].split('-').collect();
        assert_eq!(ct_parts.len(), 3, "{ct}");
        for (p, c) in plain_parts.iter().zip(&ct_parts) {
            assert_eq!(p.len(), c.len());
            assert_ne!(p, c, "segment {p} not encrypted");
        }
        assert!(ct_parts[0].bytes().chain(ct_parts[1].bytes()).all(|b| b.is_ascii_digit()));
        assert!(ct_parts[2].bytes().all(|b| b.is_ascii_alphanumeric()));
        assert_eq!(shield.decrypt_text(&ct), token);
    }
}

#[test]
fn sendgrid_tokens_keep_their_two_segments() {
    let mut shield = shield();
    let token = format!("SG.{}.{}", body(B64URL, 22, 4), body(B64URL, 43, 5));
    assert_eq!(detected(&shield, &token), ["sendgrid"]);
    let ct = ciphertext_of(&mut shield, &token);
    let (first, second) = ct.strip_prefix("SG.").and_then(|b| b.split_once('.')).expect("shape");
    assert_eq!((first.len(), second.len()), (22, 43));
    assert!(first.chars().chain(second.chars()).all(|c| B64URL.contains(c)));
    assert_eq!(shield.decrypt_text(&ct), token);
}

#[test]
fn heuristic_tokens_get_a_marker_and_a_same_length_body() {
    let mut shield = shield();
    for (name, chars, len) in [("fastly", B64URL, 32), ("aws-secret-key", B64, 40)] {
        let token = body(chars, len, 11);
        assert_eq!(detected(&shield, &token), [name], "{token}");
        let ct = ciphertext_of(&mut shield, &token);
        let marker = format!("[ENCRYPTED:{name}]");
        let ct_body = ct.strip_prefix(&marker).unwrap_or_else(|| panic!("no marker: {ct}"));
        assert_eq!(ct_body.len(), len);
        assert!(ct_body.chars().all(|c| chars.contains(c)));
        assert_eq!(shield.decrypt_text(&ct), token);
    }
    // Low entropy or too few character classes: not a secret.
    assert!(detected(&shield, &"a".repeat(32)).is_empty());
    assert!(detected(&shield, "abcdefghijklmnopqrstuvwxyzabcdef").is_empty());
}

#[test]
fn decrypt_restores_a_text_with_several_secrets() {
    let mut shield = shield();
    let openai = format!("sk-proj-{}", body(B64URL, 56, 21));
    let github = format!("ghp_{}", body(ALNUM, 36, 22));
    let aws = format!("AKIA{}", body(UPPER_DIGITS, 16, 23));
    let text = format!("OPENAI_API_KEY={openai}\nGITHUB_TOKEN=\"{github}\"\naws: {aws}, again {openai}.");
    let encrypted = shield.encrypt_text(&text);
    for secret in [&openai, &github, &aws] {
        assert!(!encrypted.contains(secret.as_str()), "{secret} leaked");
    }
    assert_eq!(encrypted.len(), text.len(), "prefix tokens keep the text's length");
    assert_eq!(shield.known_secrets(), 3, "the repeated key maps to one ciphertext");
    assert_eq!(shield.decrypt_text(&encrypted), text);
}

#[test]
fn encryption_is_deterministic_for_a_key_and_tweak() {
    let token = format!("ghp_{}", body(ALNUM, 36, 31));
    let with = |key: &[u8], tweak: Option<&str>| {
        SecretShield::new(Some(key), tweak, &[]).expect("shield").encrypt_text(&token)
    };
    let first = with(&KEY, None);
    assert_eq!(first, with(&KEY, None), "same key: same ciphertext");
    let mut one = shield();
    assert_eq!(one.encrypt_text(&token), one.encrypt_text(&token), "same session: same ciphertext");
    assert_ne!(first, with(&KEY, Some("project-a")), "the tweak changes the ciphertext");
    assert_eq!(with(&KEY, Some("project-a")), with(&KEY, Some("project-a")));
    assert_ne!(first, with(&[8; 32], None), "another key, another ciphertext");
    assert_ne!(first, with(&[7; 16], None), "AES-128 keys work too");
    let random = |_| SecretShield::new(None, None, &[]).expect("shield").encrypt_text(&token);
    assert_ne!(random(1), random(2), "random per-session keys differ");
}

#[test]
fn encrypted_messages_carry_no_plaintext() {
    let mut shield = shield();
    let openai = format!("sk-proj-{}", body(B64URL, 56, 41));
    let github = format!("ghp_{}", body(ALNUM, 36, 42));
    let aws = format!("AKIA{}", body(UPPER_DIGITS, 16, 43));
    let messages = vec![
        json!({"role": "system", "content": format!("deploy with {aws}")}),
        json!({"role": "user", "content": [
            {"type": "text", "text": format!("my key is {openai}")},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ]}),
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_1", "type": "function",
            "function": {"name": "write_file", "arguments": json!({"path": ".env", "content": format!("A=1\nT={github}\n")}).to_string()},
        }]}),
        json!({"role": "tool", "tool_call_id": "call_1", "content": format!("wrote {github}")}),
    ];
    let original = messages.clone();
    let encrypted = shield.encrypt_messages(&messages);
    assert_eq!(messages, original, "the input is not modified");
    let wire = serde_json::to_string(&encrypted).expect("json");
    for secret in [&openai, &github, &aws] {
        assert!(!wire.contains(secret.as_str()), "{secret} leaked: {wire}");
    }
    assert_eq!(encrypted[1]["content"][1], original[1]["content"][1], "images untouched");
    assert_eq!(encrypted[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(encrypted[2]["tool_calls"][0]["function"]["name"], "write_file");
    assert_eq!(encrypted[3]["tool_call_id"], "call_1");
    for (enc, orig) in encrypted.iter().zip(&original) {
        assert_eq!(shield.decrypt_message(enc)["content"], orig["content"]);
    }
}

#[test]
fn tool_call_arguments_carrying_the_ciphertext_decrypt_to_the_real_key() {
    let mut shield = shield();
    let key = format!("sk-proj-{}", body(B64URL, 56, 51));
    let sent = shield.encrypt_messages(&[json!({"role": "user", "content": format!("save {key} to .env")})]);
    let ct = sent[0]["content"].as_str().and_then(|s| s.strip_prefix("save ")?.strip_suffix(" to .env")).expect("ct");
    // The model answers with the token it saw, inside JSON arguments.
    let reply = json!({"role": "assistant", "content": format!("Saving {ct}."), "tool_calls": [{
        "id": "call_9", "type": "function",
        "function": {"name": "write_file", "arguments": json!({"path": ".env", "content": format!("KEY={ct}\n")}).to_string()},
    }]});
    let restored = shield.decrypt_message(&reply);
    assert_eq!(restored["content"], format!("Saving {key}."));
    let args: Value = serde_json::from_str(restored["tool_calls"][0]["function"]["arguments"].as_str().expect("args"))
        .expect("arguments stay valid JSON");
    assert_eq!(args["content"], format!("KEY={key}\n"));
}

#[test]
fn tokens_the_model_invents_pass_through_decryption() {
    let mut shield = shield();
    let _ = shield.encrypt_text(&format!("ghp_{}", body(ALNUM, 36, 61)));
    let invented = format!("ghp_{}", body(ALNUM, 36, 62));
    assert_eq!(shield.decrypt_text(&invented), invented);
    assert_eq!(shield.decrypt_text("nothing here"), "nothing here");
}

#[test]
fn text_without_secrets_is_unchanged() {
    let mut shield = shield();
    let texts = [
        String::new(),
        "Refactor the parser and run cargo test; see sk-learn docs.".to_owned(),
        // Swival's rules are exact: these near misses are not tokens.
        format!("sk-ant-api03-{}", body(B64URL, 48, 71)),
        format!("sk-{}", body(ALNUM, 40, 72)),
        format!("ghp_{}", body(ALNUM, 40, 73)),
        format!("xghp_{}", body(ALNUM, 36, 74)),
        format!("AKIA{}", body(UPPER_DIGITS, 12, 75)),
        "fn main() { let secret_key_name = \"not_a_real_secret_at_all\"; }".to_owned(),
    ];
    for text in texts {
        assert_eq!(shield.encrypt_text(&text), text);
    }
    assert_eq!(shield.known_secrets(), 0);
}

#[test]
fn a_key_after_a_json_newline_escape_is_found() {
    let mut shield = shield();
    let github = format!("ghp_{}", body(ALNUM, 36, 81));
    let fastly = body(B64URL, 32, 82);
    let args = json!({"content": format!("A=1\n{github}\n{fastly}\n")}).to_string();
    assert!(args.contains(&format!("\\n{github}\\n{fastly}")), "{args}");
    let encrypted = shield.encrypt_text(&args);
    assert!(!encrypted.contains(&github) && !encrypted.contains(&fastly), "{encrypted}");
    assert!(encrypted.contains("\\n[ENCRYPTED:fastly]"), "{encrypted}");
    assert_eq!(shield.decrypt_text(&encrypted), args);
}

#[test]
fn tokens_written_back_to_back_are_both_encrypted() {
    let mut shield = shield();
    let first = format!("ghp_{}", body(ALNUM, 36, 91));
    let second = format!("ghp_{}", body(ALNUM, 36, 92));
    let text = format!("{first}{second}");
    assert_eq!(detected(&shield, &text), ["github-pat", "github-pat"]);
    let encrypted = shield.encrypt_text(&text);
    assert!(!encrypted.contains(&first) && !encrypted.contains(&second), "{encrypted}");
    assert_eq!(shield.decrypt_text(&encrypted), text);
}

#[test]
fn custom_patterns_are_encrypted_ahead_of_builtins() {
    let custom = |name: &str, prefix: Option<&str>| SecretPattern {
        name: name.into(),
        prefix: prefix.map(Into::into),
        body_regex: Some("[A-Z0-9]{20}".into()),
        body_alphabet: Some("ALPHANUMERIC_UPPER".into()),
        min_body_length: Some(20),
    };
    let mut shield = SecretShield::new(Some(&KEY), None, &[custom("acme", Some("acme_"))]).expect("shield");
    let token = format!("acme_{}", body(UPPER_DIGITS, 20, 101));
    assert_eq!(detected(&shield, &token), ["acme"]);
    let ct = ciphertext_of(&mut shield, &token);
    assert!(ct.starts_with("acme_") && ct.len() == token.len());
    assert!(ct[5..].chars().all(|c| UPPER_DIGITS.contains(c)));
    assert_eq!(shield.decrypt_text(&ct), token);

    // Same prefix as a built-in: the custom pattern wins the tie.
    let ghp =
        SecretPattern { body_regex: None, body_alphabet: None, min_body_length: None, ..custom("mine", Some("ghp_")) };
    let shield = SecretShield::new(Some(&KEY), None, &[ghp]).expect("shield");
    assert_eq!(detected(&shield, &format!("ghp_{}", body(ALNUM, 36, 102))), ["mine"]);
}

#[test]
fn custom_pattern_defaults_follow_swival() {
    // Alphanumeric body, min_body_length = len(prefix) + 8, no body regex.
    let entry = SecretPattern {
        name: "tok".into(),
        prefix: Some("tok_".into()),
        body_regex: None,
        body_alphabet: None,
        min_body_length: None,
    };
    let mut shield = SecretShield::new(Some(&KEY), None, &[entry]).expect("shield");
    let long_enough = format!("tok_{}", body(ALNUM, 12, 111));
    assert_ne!(shield.encrypt_text(&long_enough), long_enough);
    let too_short = format!("tok_{}", body(ALNUM, 11, 112));
    assert_eq!(shield.encrypt_text(&too_short), too_short);
}

#[test]
fn unusable_custom_patterns_are_refused_with_the_reason() {
    let base = SecretPattern {
        name: "bad".into(),
        prefix: Some("bad_".into()),
        body_regex: None,
        body_alphabet: None,
        min_body_length: None,
    };
    let cases = [
        (SecretPattern { prefix: None, ..base.clone() }, "`prefix` is required"),
        (SecretPattern { body_regex: Some("[a-".into()), ..base.clone() }, "body_regex does not compile"),
        (SecretPattern { body_alphabet: Some("x".into()), ..base.clone() }, "at least two distinct characters"),
        (SecretPattern { body_alphabet: Some("01".into()), ..base.clone() }, "use at least 20"),
    ];
    for (entry, expected) in cases {
        let err = SecretShield::new(Some(&KEY), None, &[entry]).expect_err("refused").to_string();
        assert!(err.contains("\"bad\"") && err.contains(expected), "{err}");
    }
}

#[test]
fn keys_are_checked() {
    assert!(matches!(parse_key_hex("abc"), Err(SecretsError::KeyNotHex(_))));
    assert!(matches!(parse_key_hex("00112233"), Err(SecretsError::KeyLength(4))));
    for digits in [32, 48, 64] {
        let hex = "0f".repeat(digits / 2);
        assert_eq!(parse_key_hex(&hex).expect("key").len(), digits / 2);
        assert!(SecretShield::from_hex_key(Some(&hex), Some("t"), &[]).is_ok());
    }
    assert!(matches!(SecretShield::new(Some(&[1; 20]), None, &[]), Err(SecretsError::KeyLength(20))));
    let err = SecretShield::from_hex_key(Some("zz"), None, &[]).expect_err("not hex").to_string();
    assert!(err.contains("encrypt_secrets_key"), "{err}");
}

#[test]
fn reports_are_encrypted_value_by_value() {
    let mut shield = shield();
    let github = format!("ghp_{}", body(ALNUM, 36, 121));
    let report = json!({"version": 1, "result": {"answer": format!("used {github}")}, "timeline": [
        {"type": "tool_call", "arguments": {"token": github.clone()}, "succeeded": true},
    ]});
    let encrypted = shield.encrypt_json(&report);
    assert!(!encrypted.to_string().contains(&github));
    assert_eq!(encrypted["version"], 1);
    assert_eq!(encrypted["timeline"][0]["succeeded"], true);
    assert_eq!(
        shield.decrypt_text(encrypted["result"]["answer"].as_str().unwrap_or_default()),
        format!("used {github}")
    );
}

#[test]
fn reports_without_a_shield_are_encrypted_all_the_same_and_left_alone_without_secrets() {
    let github = format!("ghp_{}", body(ALNUM, 36, 122));
    let mut report = json!({"result": {"answer": format!("used {github}")}, "task": "plain", "turns": 3});
    SecretShield::encrypt_json_unkeyed(&mut report);
    let answer = report["result"]["answer"].as_str().unwrap_or_default();
    assert!(!answer.contains(&github) && answer.starts_with("used ghp_"), "{answer}");
    assert_eq!(report["task"], "plain");
    let clean = json!({"result": {"answer": "nothing secret"}, "turns": 3});
    let mut same = clean.clone();
    SecretShield::encrypt_json_unkeyed(&mut same);
    assert_eq!(same, clean);
}

#[test]
fn ff1_is_a_permutation_within_the_alphabet() {
    let cipher = BodyCipher::new(&KEY, [10, 62]).expect("cipher");
    let alnum: &Alphabet = &alphabet::ALPHANUMERIC;
    for seed in 0..20 {
        let plain = body(ALNUM, 36, seed);
        let ct = cipher.encrypt(alnum, b"tweak", &plain).expect("encrypt");
        assert_eq!(ct.len(), plain.len());
        assert_eq!(cipher.decrypt(alnum, b"tweak", &ct).as_deref(), Some(plain.as_str()));
    }
    // Below FF1's minimum domain (10^6 values) the cipher refuses.
    assert!(cipher.encrypt(&alphabet::DIGITS, b"", "12345").is_none());
    assert!(cipher.encrypt(&alphabet::DIGITS, b"", "123456").is_some());
}

#[test]
fn the_shield_can_move_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SecretShield>();
    assert!(format!("{:?}", shield()).contains("known_secrets"));
}

#[test]
fn dense_prefixes_do_not_make_scanning_quadratic() {
    // Every 4 bytes a prefix whose body runs to the end of the text: without
    // the body cap and the bounded cut search the characters looked at grew
    // with the square of the text's length (minutes at this size). Counted,
    // not timed: doubling the text must no more than about double the work.
    let mut shield = shield();
    let texts = |n: usize| ["AKIA".repeat(n), "sk-proj-".repeat(n / 2), format!("xoxb-1-1-{}", "AKIA".repeat(n))];
    let mut work_at = |n: usize| -> Vec<u64> {
        texts(n)
            .iter()
            .map(|text| {
                scan::work::take();
                let encrypted = shield.encrypt_text(text);
                assert_eq!(&shield.decrypt_text(&encrypted), text);
                scan::work::take()
            })
            .collect()
    };
    let (small, large) = (work_at(12_500), work_at(25_000));
    for (i, (small, large)) in small.iter().zip(&large).enumerate() {
        assert!(*small > 0, "text {i}: the scan counted no work");
        assert!(*large * 10 <= *small * 21, "text {i}: twice the text took {large} steps against {small}");
    }
}
