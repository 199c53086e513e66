//! The console's stylesheet, script, web app manifest, icons and service
//! worker, compiled into the binary: the page loads nothing from anywhere
//! else. None of them needs a paired session: they hold nothing secret
//! (the manifest is fetched without cookies).
//!
//! The icons are drawn by `scripts/make-icons`, and a test checks that the
//! committed files are what it draws. The service worker caches nothing
//! and leaves every request to the network (`assets/sw.js`).

use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::auth::refusal;

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");
const MANIFEST: &str = include_str!("assets/manifest.webmanifest");
const SERVICE_WORKER: &str = include_str!("assets/sw.js");
const ICON_192: &[u8] = include_bytes!("assets/icon-192.png");
const ICON_512: &[u8] = include_bytes!("assets/icon-512.png");
const ICON_MASKABLE_512: &[u8] = include_bytes!("assets/icon-maskable-512.png");

/// `body` as `kind`, revalidated on every use (a new console version is
/// picked up at once).
fn served(body: &'static [u8], kind: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `GET /assets/{name}`.
pub(crate) async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "console.css" => (CSS.as_bytes(), "text/css; charset=utf-8"),
        "console.js" => (JS.as_bytes(), "text/javascript; charset=utf-8"),
        "icon-192.png" => (ICON_192, "image/png"),
        "icon-512.png" => (ICON_512, "image/png"),
        "icon-maskable-512.png" => (ICON_MASKABLE_512, "image/png"),
        _ => return refusal(StatusCode::NOT_FOUND, "There is no such page."),
    };
    served(body, kind)
}

/// `GET /manifest.webmanifest`: what makes the console installable.
pub(crate) async fn manifest() -> Response {
    served(MANIFEST.as_bytes(), "application/manifest+json")
}

/// `GET /sw.js`: the service worker, at the root so that its scope is the
/// whole console (no `Service-Worker-Allowed` needed).
pub(crate) async fn service_worker() -> Response {
    served(SERVICE_WORKER.as_bytes(), "text/javascript; charset=utf-8")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The width and height a PNG's header states.
    fn png_size(png: &[u8]) -> (u32, u32) {
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        let word = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
        (word(16), word(20))
    }

    #[test]
    fn the_manifest_names_what_an_installable_app_needs_and_its_icons_exist() {
        let manifest: serde_json::Value = serde_json::from_str(MANIFEST).unwrap();
        for (key, value) in [
            ("start_url", "/"),
            ("scope", "/"),
            ("id", "/"),
            ("display", "standalone"),
            ("short_name", "countersign"),
            ("name", "countersign console"),
        ] {
            assert_eq!(manifest[key], value, "{key}");
        }
        // The theme colour is the stylesheet's accent.
        let accent = manifest["theme_color"].as_str().unwrap();
        assert!(CSS.contains(&format!("--accent: {accent};")), "{accent}");
        let icons = manifest["icons"].as_array().unwrap();
        let mut purposes = Vec::new();
        for icon in icons {
            let src = icon["src"].as_str().unwrap();
            let name = src.strip_prefix("/assets/").unwrap();
            let png = match name {
                "icon-192.png" => ICON_192,
                "icon-512.png" => ICON_512,
                "icon-maskable-512.png" => ICON_MASKABLE_512,
                other => panic!("the manifest names an icon the console does not serve: {other}"),
            };
            let (w, h) = png_size(png);
            assert_eq!(icon["sizes"], format!("{w}x{h}"), "{src}");
            assert_eq!(icon["type"], "image/png");
            purposes.push((icon["purpose"].as_str().unwrap().to_owned(), w));
        }
        purposes.sort();
        assert_eq!(
            purposes,
            [
                ("any".to_owned(), 192),
                ("any".to_owned(), 512),
                ("maskable".to_owned(), 512)
            ]
        );
    }

    #[test]
    fn the_service_worker_caches_nothing_and_opens_only_cards_of_its_origin() {
        for absent in ["caches.", ".respondWith(", "importScripts(", "fetch("] {
            assert!(!SERVICE_WORKER.contains(absent), "{absent}");
        }
        for present in [
            "\"install\"",
            "\"activate\"",
            "\"fetch\"",
            "addEventListener(\"push\"",
            "addEventListener(\"notificationclick\"",
            "new URL(\"/proposals/\" + id, self.location.origin)",
            "body: \"A proposal waits for your decision\"",
        ] {
            assert!(SERVICE_WORKER.contains(present), "{present}");
        }
        assert!(JS.contains("navigator.serviceWorker.register(\"/sw.js\""));
    }
}
