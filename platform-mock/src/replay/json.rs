//! A small JSON reader for trace lines: objects, arrays, strings, numbers,
//! booleans and null. Enough for the trace format, with errors that say
//! where and why.

use std::string::String;
use std::vec::Vec;

/// A parsed JSON value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A non-negative integer that fits `u64`.
    UInt(u64),
    /// Any other number.
    Number(f64),
    /// A string.
    Str(String),
    /// An array.
    Array(Vec<Value>),
    /// An object, keys in order of appearance.
    Object(Vec<(String, Value)>),
}

impl Value {
    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(m) => m.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value as a `u64`, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::UInt(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// Why a JSON number the reader kept as [`Value::Number`] is not a `u64`,
/// for messages of the form "`{x}` is ...": a negative number, a fraction,
/// an integer written with a sign, a decimal point or an exponent (`-0`,
/// `4096.0`, `1e3`: the value would fit, its notation does not), or one
/// past 2^64 - 1. One wording for every reader of numbers (trace lines,
/// layout files).
pub fn why_not_u64(x: f64) -> &'static str {
    if x < 0.0 {
        "a negative number"
    } else if x.fract() != 0.0 {
        "not a whole number"
    } else if x.is_sign_negative() {
        "written with a minus sign (plain integers only)"
    } else if x < 18_446_744_073_709_551_616.0 {
        "written with a decimal point or an exponent (plain integers only)"
    } else {
        "above the largest integer, 2^64 - 1"
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

const MAX_DEPTH: usize = 32;

/// Parses one complete JSON document.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(std::format!("trailing characters at column {}", p.i + 1));
    }
    Ok(v)
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\r' | b'\n') {
            self.i += 1;
        }
    }

    fn err<T>(&self, what: &str) -> Result<T, String> {
        if self.i >= self.s.len() {
            Err(std::format!("{what}: unexpected end of line"))
        } else {
            Err(std::format!("{what} at column {}", self.i + 1))
        }
    }

    fn eat(&mut self, b: u8) -> bool {
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return self.err("nested too deeply");
        }
        self.ws();
        match self.s.get(self.i) {
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(Value::Str(self.string()?)),
            Some(b't') => self.word("true", Value::Bool(true)),
            Some(b'f') => self.word("false", Value::Bool(false)),
            Some(b'n') => self.word("null", Value::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            _ => self.err("expected a value"),
        }
    }

    fn word(&mut self, w: &str, v: Value) -> Result<Value, String> {
        if self.s[self.i..].starts_with(w.as_bytes()) {
            self.i += w.len();
            Ok(v)
        } else {
            self.err("expected a value")
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        self.i += 1;
        let mut members = Vec::new();
        self.ws();
        if self.eat(b'}') {
            return Ok(Value::Object(members));
        }
        loop {
            self.ws();
            if self.s.get(self.i) != Some(&b'"') {
                return self.err("expected a key");
            }
            let at = self.i;
            let k = self.string()?;
            // A key twice would leave which value counts to the reader.
            if members.iter().any(|(seen, _)| *seen == k) {
                self.i = at;
                return self.err(&std::format!("the key \"{k}\" appears twice"));
            }
            self.ws();
            if !self.eat(b':') {
                return self.err("expected ':'");
            }
            let v = self.value(depth + 1)?;
            members.push((k, v));
            self.ws();
            if self.eat(b',') {
                continue;
            }
            if self.eat(b'}') {
                return Ok(Value::Object(members));
            }
            return self.err("expected ',' or '}'");
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        self.i += 1;
        let mut items = Vec::new();
        self.ws();
        if self.eat(b']') {
            return Ok(Value::Array(items));
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.ws();
            if self.eat(b',') {
                continue;
            }
            if self.eat(b']') {
                return Ok(Value::Array(items));
            }
            return self.err("expected ',' or ']'");
        }
    }

    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let Some(&c) = self.s.get(self.i) else {
                return self.err("unterminated string");
            };
            self.i += 1;
            match c {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&e) = self.s.get(self.i) else {
                        return self.err("unterminated string");
                    };
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hex = self
                                .s
                                .get(self.i..self.i + 4)
                                .and_then(|h| std::str::from_utf8(h).ok())
                                .and_then(|h| u32::from_str_radix(h, 16).ok());
                            let Some(code) = hex else {
                                return self.err("bad \\u escape");
                            };
                            self.i += 4;
                            out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                        }
                        _ => return self.err("bad escape"),
                    }
                }
                _ => {
                    // Copy a run of plain bytes (UTF-8 is already valid: the
                    // input is a `&str`).
                    let start = self.i - 1;
                    while self.i < self.s.len() && !matches!(self.s[self.i], b'"' | b'\\') {
                        self.i += 1;
                    }
                    match std::str::from_utf8(&self.s[start..self.i]) {
                        Ok(t) => out.push_str(t),
                        Err(_) => return self.err("invalid UTF-8"),
                    }
                }
            }
        }
    }

    fn number(&mut self) -> Result<Value, String> {
        let start = self.i;
        let negative = self.eat(b'-');
        let digits_start = self.i;
        while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
            self.i += 1;
        }
        if self.i == digits_start {
            return self.err("expected digits");
        }
        let mut integer = !negative;
        if self.eat(b'.') {
            integer = false;
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
        }
        if matches!(self.s.get(self.i), Some(b'e' | b'E')) {
            integer = false;
            self.i += 1;
            if matches!(self.s.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                self.i += 1;
            }
        }
        let text = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
        if integer {
            if let Ok(v) = text.parse::<u64>() {
                return Ok(Value::UInt(v));
            }
        }
        match text.parse::<f64>() {
            Ok(v) => Ok(Value::Number(v)),
            Err(_) => {
                self.i = start;
                self.err("bad number")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_trace_lines() {
        let v = parse(r#"{"op":"alloc","id":12,"size":4096,"stream":1}"#).unwrap();
        assert_eq!(v.get("op").and_then(Value::as_str), Some("alloc"));
        assert_eq!(v.get("size").and_then(Value::as_u64), Some(4096));
        let h = parse(r#"{"header": {"a": [1, 2.5, -3], "b": null, "c": true, "s": "x\"\u0041"}}"#)
            .unwrap();
        let inner = h.get("header").unwrap();
        assert_eq!(
            inner.get("a"),
            Some(&Value::Array(vec![
                Value::UInt(1),
                Value::Number(2.5),
                Value::Number(-3.0)
            ]))
        );
        assert_eq!(inner.get("s").and_then(Value::as_str), Some("x\"A"));
    }

    #[test]
    fn errors_say_where() {
        for (text, want) in [
            (r#"{"op":"alloc""#, "unexpected end"),
            (r#"{"op" "alloc"}"#, "expected ':' at column 7"),
            (r#"{"op":"alloc"} x"#, "trailing characters at column 16"),
            (r#"{"size":-}"#, "expected digits"),
            (r#"{"op":tru}"#, "expected a value at column 7"),
            (
                r#"{"size":1,"size":2}"#,
                "the key \"size\" appears twice at column 11",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
        let deep = "[".repeat(100);
        assert!(parse(&deep).unwrap_err().contains("nested too deeply"));
    }
}
