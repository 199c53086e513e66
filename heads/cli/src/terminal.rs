//! The controlling terminal, where a person reads the authoritative preview
//! and types a random challenge. Standard input and output are not used for
//! this: they may be a pipe from an agent. Without a controlling terminal,
//! approval is refused.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};

/// Where a person confirms a decision.
pub trait Terminal {
    /// Show text to the person.
    fn show(&mut self, text: &str) -> io::Result<()>;
    /// Ask for one line of input; returns it without the line ending.
    fn ask(&mut self, prompt: &str) -> io::Result<String>;
}

/// Opens the process's controlling terminal (`/dev/tty`).
pub fn controlling_terminal() -> io::Result<Box<dyn Terminal>> {
    let tty = OpenOptions::new().read(true).write(true).open("/dev/tty")?;
    let reader = BufReader::new(tty.try_clone()?);
    Ok(Box::new(Tty {
        writer: tty,
        reader,
    }))
}

struct Tty {
    writer: File,
    reader: BufReader<File>,
}

impl Terminal for Tty {
    fn show(&mut self, text: &str) -> io::Result<()> {
        self.writer.write_all(text.as_bytes())?;
        self.writer.flush()
    }

    fn ask(&mut self, prompt: &str) -> io::Result<String> {
        self.show(prompt)?;
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the terminal closed",
            ));
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_string())
    }
}

/// A fresh random challenge: 8 characters from an alphabet without
/// look-alikes, drawn without modulo bias.
pub fn challenge() -> io::Result<String> {
    const ALPHABET: &[u8] = b"ACDEFGHJKLMNPQRTUVWXY34679";
    // The largest multiple of the alphabet size that fits in a byte.
    const LIMIT: u8 = (256 / ALPHABET.len() * ALPHABET.len()) as u8;
    let mut chars = String::with_capacity(9);
    while chars.len() < 8 {
        let mut byte = [0u8; 1];
        getrandom::fill(&mut byte).map_err(|e| io::Error::other(e.to_string()))?;
        if byte[0] < LIMIT {
            chars.push(char::from(ALPHABET[usize::from(byte[0]) % ALPHABET.len()]));
        }
    }
    chars.insert(4, '-');
    Ok(chars)
}
