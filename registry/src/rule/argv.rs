//! The `argv` constraint test: a shell command matched by the words
//! (argv) a shell would run, never by its text.
//!
//! It owns a lexer for a strict subset of POSIX sh words and the pattern a
//! rule compares those words with. The lexer either returns exactly the
//! argv `/bin/sh -c` would run or refuses: anything it cannot see through
//! (operators, expansions, globs, comments, assignments, control or
//! invisible characters, escapes some shell reads differently) is refused,
//! and a refused command never matches, so a person is asked. It must not
//! guess: when a construct is doubtful, refuse it.
//!
//! What it cannot see: which file `PATH` resolves a bare name to, and any
//! alias, function or environment of the shell that runs the command. A
//! rule names the argv; what the program does with it is the rule's
//! author's decision (see docs/rules.md).

use serde_json::Value;

use super::{MAX_ONE_OF, RuleError, malformed};
use crate::{is_terminal_unsafe, terminal_safe};
use countersign_verifier::canonical;

/// Longest command the lexer reads, in bytes.
pub const MAX_COMMAND_BYTES: usize = 4096;
/// Most arguments (after the program) one pattern lists.
pub const MAX_ARGV_ARGS: usize = 32;
/// Longest program or argument string in a pattern, in bytes.
pub const MAX_ARGV_WORD_BYTES: usize = 1024;

/// Words the shell reads as syntax, not as a command, in command position
/// (POSIX sh, bash and zsh). A command whose first word is one of them,
/// quoted or not, is refused; a pattern may not name one.
#[rustfmt::skip]
const RESERVED_WORDS: &[&str] = &[
    "!", "{", "}", "[[", "]]", "case", "coproc", "do", "done", "elif", "else", "end", "esac",
    "fi", "for", "foreach", "function", "if", "in", "nocorrect", "repeat", "select", "then",
    "time", "until", "while",
];

/// Why a command was not split into words. Each names the construct; the
/// text is one line of printable ASCII.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// No words at all.
    #[error("the command is empty")]
    Empty,
    /// Longer than [`MAX_COMMAND_BYTES`].
    #[error("the command is longer than {} bytes", MAX_COMMAND_BYTES)]
    TooLong,
    /// A newline or carriage return, anywhere.
    #[error("a newline or carriage return (a second command or a line continuation)")]
    Newline,
    /// Any other control character, anywhere (a tab only separates words).
    #[error("control character U+{0:04X}")]
    Control(u32),
    /// A character a terminal would hide or reorder (format, separator,
    /// private-use, unassigned or default-ignorable), anywhere.
    #[error("invisible or reordering character U+{0:04X}")]
    Invisible(u32),
    /// A non-ASCII character outside quotes (non-ASCII spaces among them).
    #[error("non-ASCII character U+{0:04X} outside quotes")]
    NonAscii(u32),
    /// `;` `&` `|` `<` `>` `(` `)` outside quotes.
    #[error("{0:?} outside quotes (a command list, pipe, background job, redirection or subshell)")]
    Operator(char),
    /// `$` or a backtick outside single quotes.
    #[error("{0:?} outside single quotes (parameter expansion or command substitution)")]
    Expansion(char),
    /// `*` `?` `[` `]` outside quotes.
    #[error("{0:?} outside quotes (a filename glob)")]
    Glob(char),
    /// `{` `}` outside quotes.
    #[error("{0:?} outside quotes (brace expansion)")]
    Brace(char),
    /// `~` outside quotes.
    #[error("'~' outside quotes (tilde expansion, or a glob operator in zsh)")]
    Tilde,
    /// `#` outside quotes.
    #[error("'#' outside quotes (a comment, or a glob operator in zsh)")]
    Comment,
    /// `!` outside single quotes.
    #[error("'!' outside single quotes (history expansion or negation)")]
    Bang,
    /// `^` outside quotes.
    #[error("'^' outside quotes (a pipe in the Bourne shell, a glob operator in zsh)")]
    Caret,
    /// `=` starting a word outside quotes.
    #[error("'=' starting a word outside quotes (zsh expands =name to a path)")]
    LeadingEquals,
    /// A first word containing `=`.
    #[error("an environment assignment (NAME=value) before the command")]
    Assignment,
    /// A first word the shell reads as syntax.
    #[error("the shell reserved word {0:?} as the command")]
    ReservedWord(&'static str),
    /// A quote never closed: `"single"` or `"double"`.
    #[error("an unterminated {0} quote")]
    Unterminated(&'static str),
    /// `$`, a backtick, a backslash or `!` inside double quotes.
    #[error("{0:?} inside double quotes (expansion or escape; use single quotes)")]
    InDoubleQuotes(char),
    /// A backslash as the last character.
    #[error("a backslash at the end of the command")]
    TrailingBackslash,
    /// A backslash before a letter or digit outside quotes.
    #[error("a backslash before {0:?} (only a space or ASCII punctuation may be escaped)")]
    Escape(char),
    /// `\'` or `\\` inside single quotes.
    #[error(
        "a backslash before a quote or backslash inside single quotes (some shells end the quote elsewhere)"
    )]
    SingleQuotedBackslash,
    /// A single-quoted string right after another.
    #[error("two single-quoted strings back to back (some shells read '' as a quote)")]
    AdjacentSingleQuotes,
}

/// Splits `command` into the argv `/bin/sh -c` would run, or refuses it.
///
/// Accepted: words separated by spaces and tabs, made of printable ASCII
/// outside quotes, single-quoted text (literal), double-quoted text without
/// `$`, backtick, backslash or `!`, and a backslash before a space or ASCII
/// punctuation outside quotes. Everything else is a [`Refusal`].
pub fn split(command: &str) -> Result<Vec<String>, Refusal> {
    if command.len() > MAX_COMMAND_BYTES {
        return Err(Refusal::TooLong);
    }
    let mut words = Vec::new();
    // None between words; Some once a word has begun (perhaps as '').
    let mut word: Option<String> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' || c == '\t' {
            words.extend(word.take());
            continue;
        }
        visible(c)?;
        let at_start = word.is_none();
        match c {
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        None => return Err(Refusal::Unterminated("single")),
                        Some('\'') => break,
                        Some('\\') if matches!(chars.peek(), Some('\'' | '\\')) => {
                            return Err(Refusal::SingleQuotedBackslash);
                        }
                        Some(q) => {
                            visible(q)?;
                            w.push(q);
                        }
                    }
                }
                if chars.peek() == Some(&'\'') {
                    return Err(Refusal::AdjacentSingleQuotes);
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        None => return Err(Refusal::Unterminated("double")),
                        Some('"') => break,
                        Some(q @ ('$' | '`' | '\\' | '!')) => {
                            return Err(Refusal::InDoubleQuotes(q));
                        }
                        Some(q) => {
                            visible(q)?;
                            w.push(q);
                        }
                    }
                }
            }
            '\\' => {
                let escaped = chars.next().ok_or(Refusal::TrailingBackslash)?;
                if escaped != ' ' {
                    visible(escaped)?;
                    if !escaped.is_ascii() {
                        return Err(Refusal::NonAscii(u32::from(escaped)));
                    }
                    if !escaped.is_ascii_punctuation() {
                        return Err(Refusal::Escape(escaped));
                    }
                }
                word.get_or_insert_with(String::new).push(escaped);
            }
            ';' | '&' | '|' | '<' | '>' | '(' | ')' => return Err(Refusal::Operator(c)),
            '$' | '`' => return Err(Refusal::Expansion(c)),
            '*' | '?' | '[' | ']' => return Err(Refusal::Glob(c)),
            '{' | '}' => return Err(Refusal::Brace(c)),
            '~' => return Err(Refusal::Tilde),
            '#' => return Err(Refusal::Comment),
            '!' => return Err(Refusal::Bang),
            '^' => return Err(Refusal::Caret),
            '=' if at_start => return Err(Refusal::LeadingEquals),
            c if c.is_ascii_graphic() => word.get_or_insert_with(String::new).push(c),
            c => return Err(Refusal::NonAscii(u32::from(c))),
        }
    }
    words.extend(word);
    let first = words.first().ok_or(Refusal::Empty)?;
    if first.contains('=') {
        return Err(Refusal::Assignment);
    }
    if let Some(reserved) = RESERVED_WORDS.iter().find(|r| **r == first.as_str()) {
        return Err(Refusal::ReservedWord(reserved));
    }
    Ok(words)
}

/// Refuses control and terminal-unsafe characters (a tab is handled by
/// the caller, only where it separates words).
fn visible(c: char) -> Result<(), Refusal> {
    match c {
        '\n' | '\r' => Err(Refusal::Newline),
        c if c.is_control() => Err(Refusal::Control(u32::from(c))),
        c if is_terminal_unsafe(c) => Err(Refusal::Invisible(u32::from(c))),
        _ => Ok(()),
    }
}

/// What a rule requires of a command's argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgvPattern {
    program: String,
    args: Vec<ArgPattern>,
    more_args: bool,
}

/// One positional argument of an [`ArgvPattern`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgPattern {
    /// Exactly this string.
    Exact(String),
    /// Exactly one of these strings.
    OneOf(Vec<String>),
}

impl ArgPattern {
    fn matches(&self, arg: &str) -> bool {
        match self {
            ArgPattern::Exact(s) => s == arg,
            ArgPattern::OneOf(options) => options.iter().any(|o| o == arg),
        }
    }
}

impl ArgvPattern {
    /// The program, compared literally with argv\[0\].
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The arguments, compared positionally with argv\[1..\].
    pub fn args(&self) -> &[ArgPattern] {
        &self.args
    }

    /// Whether further arguments may follow the listed ones.
    pub fn more_args(&self) -> bool {
        self.more_args
    }

    /// Whether `argv` is the program, then the listed arguments, then
    /// nothing more (or anything more, with `more_args`).
    pub fn matches(&self, argv: &[String]) -> bool {
        let Some((program, rest)) = argv.split_first() else {
            return false;
        };
        let count_fits = if self.more_args {
            rest.len() >= self.args.len()
        } else {
            rest.len() == self.args.len()
        };
        *program == self.program
            && count_fits
            && self.args.iter().zip(rest).all(|(p, a)| p.matches(a))
    }

    /// Whether `command` splits (see [`split`]) into an argv this matches.
    pub fn matches_command(&self, command: &str) -> bool {
        split(command).is_ok_and(|argv| self.matches(&argv))
    }

    /// Reads a pattern strictly: an object with exactly `program`, `args`
    /// and `more_args`.
    pub(super) fn from_value(value: Value) -> Result<ArgvPattern, RuleError> {
        let Value::Object(mut m) = value else {
            return Err(malformed(
                "argv must be an object with program, args and more_args",
            ));
        };
        let mut take = |key: &str| {
            m.remove(key)
                .ok_or_else(|| malformed(&format!("argv needs {key}")))
        };
        let program = match take("program")? {
            Value::String(p) if is_program(&p) => p,
            Value::String(p) if is_reserved(&p) => {
                return Err(malformed(&format!(
                    "argv program {:?} is a shell reserved word, not a command",
                    terminal_safe(&p)
                )));
            }
            _ => {
                return Err(malformed(
                    "argv program must be a command name or an absolute path: 1 to 1024 bytes, no whitespace, control characters or '='",
                ));
            }
        };
        let args = match take("args")? {
            Value::Array(items) if items.len() <= MAX_ARGV_ARGS => items
                .into_iter()
                .map(arg_pattern)
                .collect::<Result<Vec<_>, _>>()?,
            _ => {
                return Err(malformed(&format!(
                    "argv args must be an array of at most {MAX_ARGV_ARGS} arguments"
                )));
            }
        };
        let more_args = match take("more_args")? {
            Value::Bool(b) => b,
            _ => return Err(malformed("argv more_args must be true or false")),
        };
        if let Some(key) = m.keys().next() {
            return Err(malformed(&format!(
                "unknown argv key {:?}",
                terminal_safe(key)
            )));
        }
        Ok(ArgvPattern {
            program,
            args,
            more_args,
        })
    }

    /// The test as a person reads it in a rule's scope, after the pointer.
    pub(super) fn describe(&self) -> String {
        let mut words = vec![shown_word(&self.program)];
        for arg in &self.args {
            words.push(match arg {
                ArgPattern::Exact(s) => shown_word(s),
                ArgPattern::OneOf(options) => {
                    let list: Vec<_> = options.iter().map(|o| shown_word(o)).collect();
                    format!("(one of: {})", list.join(" | "))
                }
            });
        }
        let words = words.join(" ");
        if self.more_args {
            format!("is the plain shell command: {words} (then ANY further arguments)")
        } else {
            format!("is exactly the plain shell command: {words}")
        }
    }
}

/// A bare command name (no `/`) or an absolute path, that [`split`] could
/// return as argv\[0\].
fn is_program(p: &str) -> bool {
    !p.is_empty()
        && p.len() <= MAX_ARGV_WORD_BYTES
        && (p.starts_with('/') || !p.contains('/'))
        && !p.contains('=')
        && !p
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || is_terminal_unsafe(c))
        && !is_reserved(p)
}

fn is_reserved(p: &str) -> bool {
    RESERVED_WORDS.contains(&p)
}

fn arg_pattern(value: Value) -> Result<ArgPattern, RuleError> {
    let bad = || {
        malformed(&format!(
            "each argv argument is a string of at most {MAX_ARGV_WORD_BYTES} bytes or {{\"one_of\": [1 to {MAX_ONE_OF} such strings]}}"
        ))
    };
    let word = |v: Value| match v {
        Value::String(s) if s.len() <= MAX_ARGV_WORD_BYTES => Ok(s),
        _ => Err(bad()),
    };
    match value {
        Value::String(_) => word(value).map(ArgPattern::Exact),
        Value::Object(mut m) if m.len() == 1 => match m.remove("one_of") {
            Some(Value::Array(items)) if (1..=MAX_ONE_OF).contains(&items.len()) => items
                .into_iter()
                .map(word)
                .collect::<Result<Vec<_>, _>>()
                .map(ArgPattern::OneOf),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

/// A word as a person reads it: bare when it is plain ASCII that cannot be
/// mistaken for the scope's own punctuation, otherwise a JSON string made
/// terminal-safe.
fn shown_word(word: &str) -> String {
    let bare = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@%+=".contains(c));
    if bare {
        word.to_owned()
    } else {
        let json = canonical::to_canonical(&Value::String(word.to_owned())).unwrap_or_default();
        terminal_safe(&json).into_owned()
    }
}

#[cfg(test)]
mod tests;
