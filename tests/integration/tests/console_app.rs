//! The console as an installable web app, over real TLS, served by the
//! same `countersign::console_state` as `countersign console`: the
//! manifest, icons and service worker are served to anyone (they hold
//! nothing, and a manifest is fetched without cookies), each with its
//! type, under a policy that allows them from the console only and no
//! inline script; every page links the manifest and names the theme
//! colour; the committed icons are what `scripts/make-icons` draws.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod console_support;
mod support;

use api_support::Reply;
use console_support::{get, https, pair_as};
use support::Harness;

/// The width and height a PNG states.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let word = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (word(16), word(20))
}

/// The value of header `name` in `reply` (lower-case names).
fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply
        .headers
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in {}", reply.headers))
}

#[tokio::test]
async fn the_web_app_is_served_to_anyone_under_a_strict_policy() {
    let h = Harness::start().await;
    let site = console_support::serve(&h.home(), None).await;
    // No cookie: the manifest is fetched without one.
    let manifest = https(&site, "GET", "/manifest.webmanifest", &[], b"").await;
    assert_eq!(manifest.status, 200);
    assert_eq!(
        header(&manifest, "content-type"),
        "application/manifest+json"
    );
    let csp = header(&manifest, "content-security-policy");
    for directive in [
        "manifest-src 'self'",
        "worker-src 'self'",
        "script-src 'self'",
        "default-src 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} in {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    let doc = manifest.json();
    assert_eq!(doc["display"], "standalone");
    assert_eq!(doc["start_url"], "/");
    assert_eq!(doc["scope"], "/");
    for icon in doc["icons"].as_array().unwrap() {
        let src = icon["src"].as_str().unwrap();
        let png = https(&site, "GET", src, &[], b"").await;
        assert_eq!(png.status, 200, "{src}");
        assert_eq!(header(&png, "content-type"), "image/png");
        let bytes = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../heads/console/src/assets")
                .join(src.strip_prefix("/assets/").unwrap()),
        )
        .unwrap();
        let (w, h) = png_size(&bytes);
        assert_eq!(icon["sizes"], format!("{w}x{h}"), "{src}");
    }
    let worker = https(&site, "GET", "/sw.js", &[], b"").await;
    assert_eq!(worker.status, 200);
    assert_eq!(
        header(&worker, "content-type"),
        "text/javascript; charset=utf-8"
    );
    assert_eq!(header(&worker, "cache-control"), "no-cache");
    assert!(worker.body.contains("addEventListener(\"fetch\""));

    // Every page links the manifest and names the theme colour, the
    // pairing page too.
    let (paired, cookie) = pair_as(&site, &h.home(), "console", None).await;
    for (target, cookie) in [
        ("/", cookie.as_str()),
        ("/devices", cookie.as_str()),
        ("/history", cookie.as_str()),
        ("/rules", cookie.as_str()),
        ("/", ""),
        ("/pair/cp1_x", ""),
    ] {
        let page = get(&paired, cookie, target).await;
        for part in [
            r#"<link rel="manifest" href="/manifest.webmanifest">"#,
            r##"<meta name="theme-color" content="#1f5fbf">"##,
        ] {
            assert!(
                page.body.contains(part),
                "{target}: {part} in {}",
                page.body
            );
        }
    }
}

#[test]
fn the_committed_icons_are_what_the_script_draws() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/make-icons");
    let output = std::process::Command::new("python3")
        .arg(&script)
        .arg("--check")
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
