//! The page frame and the small pieces every page uses. maud escapes every
//! interpolated value for HTML; [`shown`] also makes control, bidi and
//! zero-width characters visible (`\u{..}`), as the terminal does, so a
//! value can neither hide text nor forge a line. Nothing is truncated: long
//! values wrap.

use maud::{DOCTYPE, Markup, html};

use countersign_registry::terminal_safe;

/// The product name in every title.
const NAME: &str = "countersign console";

/// Text as a person may safely see it: every unsafe character escaped.
pub(crate) fn shown(text: &str) -> String {
    terminal_safe(text).into_owned()
}

/// The web app's theme colour (the stylesheet's accent, the manifest's
/// `theme_color`).
const THEME_COLOR: &str = "#1f5fbf";

/// The navigation of a paired browser: each page's title and address.
const NAV: [(&str, &str); 5] = [
    ("Pending", "/"),
    ("History", "/history"),
    ("Passkeys", "/passkeys"),
    ("Rules", "/rules"),
    ("Devices", "/devices"),
];

/// A whole page: title (with the pending count when known), the
/// navigation for a paired browser (the page of that title marked as the
/// current one), the web app's manifest and theme colour, and `body`.
pub(crate) fn page(title: &str, pending: Option<usize>, paired: bool, body: Markup) -> Markup {
    let full = match pending {
        Some(n) => format!("({n}) {title} · {NAME}"),
        None => format!("{title} · {NAME}"),
    };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                meta name="theme-color" content=(THEME_COLOR);
                title { (full) }
                link rel="manifest" href="/manifest.webmanifest";
                link rel="icon" type="image/png" sizes="192x192" href="/assets/icon-192.png";
                link rel="apple-touch-icon" href="/assets/icon-192.png";
                link rel="stylesheet" href="/assets/console.css";
                script src="/assets/console.js" defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header {
                    span.brand { "countersign" }
                    @if paired {
                        nav aria-label="Console" {
                            @for (label, href) in NAV {
                                a href=(href) aria-current=[(label == title).then_some("page")] { (label) }
                                " "
                            }
                        }
                    }
                }
                main #main tabindex="-1" { (body) }
            }
        }
    }
}

/// A form's hidden page-key field, left empty: the page's script fills
/// it from the origin's storage at submit time (`sessions`), so the key
/// is in no page a cookie alone can fetch.
pub(crate) fn page_key_field() -> Markup {
    html! { input type="hidden" name=(crate::auth::PAGE_KEY_FIELD) value="" data-page-key; }
}

/// A definition row: `label` and a value shown safely.
pub(crate) fn row(label: &str, value: &str) -> Markup {
    html! {
        dt { (label) }
        dd { code { (shown(value)) } }
    }
}

/// `text` shown safely, each `quoted` command in it as code rather than
/// between literal backticks (text with an odd number of them as it is).
pub(crate) fn with_code(text: &str) -> Markup {
    let quoted = text.matches('`').count().is_multiple_of(2);
    html! {
        @for (i, part) in text.split('`').enumerate() {
            @if quoted && i % 2 == 1 { code { (shown(part)) } } @else if quoted { (shown(part)) } @else {
                @if i > 0 { "`" } (shown(part))
            }
        }
    }
}

/// A notice page's body: a heading, a message and a way on.
pub(crate) fn notice(heading: &str, message: &str, back: Option<(&str, &str)>) -> Markup {
    html! {
        h1 { (heading) }
        p.message role="status" { (with_code(message)) }
        @if let Some((href, label)) = back {
            p { a href=(href) { (label) } }
        }
    }
}

/// Preformatted, wrapped, safe text on one logical line (canonical
/// arguments, a model-supplied note): a newline in it is shown as `\u{a}`,
/// so no value can start a line of its own.
pub(crate) fn block(text: &str) -> Markup {
    html! { pre.block { (shown(text)) } }
}

/// The signer's preview: its own lines kept (the signer escaped every value
/// in them), anything unsafe inside a line escaped again.
pub(crate) fn preview_block(text: &str) -> Markup {
    let lines: Vec<String> = text.trim_end_matches('\n').split('\n').map(shown).collect();
    html! { pre.block { (lines.join("\n")) } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quoted_command_is_shown_as_code_and_an_odd_backtick_as_itself() {
        assert_eq!(
            with_code("pair again with `countersign console pair`.").into_string(),
            "pair again with <code>countersign console pair</code>."
        );
        assert_eq!(with_code("a ` b").into_string(), "a ` b");
        assert_eq!(with_code("`<b>`").into_string(), "<code>&lt;b&gt;</code>");
    }
}
