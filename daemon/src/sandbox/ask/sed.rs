//! Reading a sed script (GNU sed's syntax) for the commands that run a
//! shell command (`e`, the `s///e` flag) or write a file (`w`, `W`, the
//! `s///w` flag). Where the reader is unsure it reads as little as it
//! can, so that what follows is read as commands; a script it cannot read
//! counts as `e`: sed might run it.

/// The risky commands in `script`: `e`, `w`, both or neither.
pub fn risky_commands(script: &str) -> Vec<char> {
    let mut p = Reader { chars: script.chars().collect(), at: 0, found: Vec::new() };
    if p.script().is_none() {
        p.note('e');
    }
    p.found
}

/// A sed script being read; `None` from a method: it cannot be read.
struct Reader {
    chars: Vec<char>,
    at: usize,
    found: Vec<char>,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn note(&mut self, c: char) {
        if !self.found.contains(&c) {
            self.found.push(c);
        }
    }

    fn skip(&mut self, what: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&what) {
            self.at += 1;
        }
    }

    fn blanks(&mut self) {
        self.skip(|c| c == ' ' || c == '\t');
    }

    fn digits(&mut self) -> bool {
        let start = self.at;
        self.skip(|c| c.is_ascii_digit());
        self.at > start
    }

    /// The rest of the line (a file name, a shell command).
    fn line(&mut self) {
        self.skip(|c| c != '\n');
    }

    /// a, i, c text: to the first newline not escaped.
    fn text(&mut self) {
        while let Some(c) = self.bump() {
            match c {
                '\\' => {
                    self.bump();
                }
                '\n' => return,
                _ => {}
            }
        }
    }

    /// A label or argument word: to `;`, a blank or a newline.
    fn word(&mut self) {
        self.blanks();
        self.skip(|c| !(c == ';' || c.is_whitespace()));
    }

    /// A command ends at `;`, a newline, `}`, `#` or the script's end.
    fn end(&mut self) -> Option<()> {
        self.blanks();
        matches!(self.peek(), None | Some(';' | '\n' | '}' | '#')).then_some(())
    }

    fn script(&mut self) -> Option<()> {
        loop {
            self.skip(|c| c.is_whitespace() || c == ';');
            if self.peek().is_none() {
                return Some(());
            }
            self.addresses()?;
            self.blanks();
            while self.peek() == Some('!') {
                self.bump();
                self.blanks();
            }
            let command = self.bump()?;
            self.command(command)?;
        }
    }

    fn command(&mut self, command: char) -> Option<()> {
        match command {
            '{' | '}' => Some(()),
            '#' | 'r' | 'R' => {
                self.line();
                Some(())
            }
            'w' | 'W' | 'e' => {
                self.note(if command == 'e' { 'e' } else { 'w' });
                self.line();
                Some(())
            }
            'a' | 'i' | 'c' => {
                self.text();
                Some(())
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                self.word();
                Some(())
            }
            's' => self.substitute(),
            'y' => {
                let delim = self.delimiter()?;
                self.part(delim)?;
                self.part(delim)?;
                self.end()
            }
            'q' | 'Q' | 'l' | 'L' => {
                self.blanks();
                self.digits();
                self.end()
            }
            '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => self.end(),
            _ => None,
        }
    }

    fn delimiter(&mut self) -> Option<char> {
        self.bump().filter(|d| *d != '\n' && *d != '\\')
    }

    /// A regex or replacement up to `delim` (escapes skipped).
    fn part(&mut self, delim: char) -> Option<()> {
        loop {
            match self.bump()? {
                '\\' => {
                    self.bump()?;
                }
                '\n' => return None,
                c if c == delim => return Some(()),
                _ => {}
            }
        }
    }

    fn substitute(&mut self) -> Option<()> {
        let delim = self.delimiter()?;
        self.part(delim)?;
        self.part(delim)?;
        loop {
            match self.peek() {
                Some('g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9') => {
                    self.bump();
                }
                Some('e') => {
                    self.note('e');
                    self.bump();
                }
                Some('w') => {
                    self.note('w');
                    self.line();
                    return Some(());
                }
                _ => return self.end(),
            }
        }
    }

    /// Zero, one or two addresses.
    fn addresses(&mut self) -> Option<()> {
        if !self.address()? {
            return Some(());
        }
        self.blanks();
        if self.peek() == Some(',') {
            self.bump();
            self.blanks();
            if matches!(self.peek(), Some('+' | '~')) {
                self.bump();
                return self.digits().then_some(());
            }
            return self.address()?.then_some(());
        }
        Some(())
    }

    /// One address, if one starts here.
    fn address(&mut self) -> Option<bool> {
        match self.peek() {
            Some('0'..='9') => {
                self.digits();
                if self.peek() == Some('~') {
                    self.bump();
                    self.digits();
                }
            }
            Some('$') => {
                self.bump();
            }
            Some('/') => {
                self.bump();
                self.part('/')?;
                self.skip(|c| c == 'I' || c == 'M');
            }
            Some('\\') => {
                self.bump();
                let delim = self.delimiter()?;
                self.part(delim)?;
                self.skip(|c| c == 'I' || c == 'M');
            }
            _ => return Some(false),
        }
        Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::risky_commands as r;

    #[test]
    fn harmless_scripts_have_no_risky_command() {
        for s in ["1p", "s/a/b/g", "$!N;P;D", "/x/,/y/{s,a,b,2;p}", "1~2d", "0,/re/Id", "y/ab/cd/", ":a;N;ba", "10q5"] {
            assert!(r(s).is_empty(), "{s}: {:?}", r(s));
        }
        assert!(r("1a append; e is text\n2p").is_empty());
        assert!(r("/x/r file;e not a command").is_empty());
    }

    #[test]
    fn execute_and_write_commands_are_found() {
        assert_eq!(r("1e touch PWNED"), ['e']);
        assert_eq!(r("$!e"), ['e']);
        assert_eq!(r("s/.*/id/e"), ['e']);
        assert_eq!(r("s/a/b/gew out"), ['e', 'w']);
        assert_eq!(r("1p;2w out"), ['w']);
        assert_eq!(r("/x/{W out\n}"), ['w']);
        assert_eq!(r(":a;e id"), ['e']);
        assert_eq!(r("1a text\\\ncontinued\ne id"), ['e']);
    }

    #[test]
    fn a_script_that_cannot_be_read_counts_as_running_commands() {
        assert_eq!(r("s/unterminated"), ['e']);
        assert_eq!(r("1j"), ['e']);
        assert_eq!(r("1p x"), ['e']);
    }
}
