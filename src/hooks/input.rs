//! Reading hook input (docs/hook-contracts.md#h-1): bounded stdin, byte-order marks,
//! exactly one JSON value.

use std::io::{self, Read};

use serde_json::{Map, Value, json};

use super::code::HookCode;

/// A plumbing failure while reading or parsing input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputError {
    /// The diagnostic code.
    pub code: HookCode,
    /// One sentence (never input content).
    pub message: String,
    /// Code-specific data (byte counts, parser position).
    pub detail: Value,
}

fn err(code: HookCode, message: impl Into<String>, detail: Value) -> InputError {
    InputError {
        code,
        message: message.into(),
        detail,
    }
}

/// Reads at most `max` bytes; one more byte is `HOOK_STDIN_TOO_LARGE`
/// (reading stops there: no drain).
pub fn read_stdin(r: &mut dyn Read, max: u64) -> Result<Vec<u8>, InputError> {
    let mut buf = Vec::new();
    let mut limited = r.take(max + 1);
    loop {
        match limited.read_to_end(&mut buf) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(err(
                    HookCode::HookStdinRead,
                    "standard input could not be read",
                    json!({"error": e.to_string(), "bytes_read": buf.len()}),
                ));
            }
        }
    }
    if buf.len() as u64 > max {
        return Err(err(
            HookCode::HookStdinTooLarge,
            format!("standard input exceeds hooks.max_stdin_bytes ({max})"),
            json!({"max": max, "bytes_read": buf.len()}),
        ));
    }
    if buf.iter().all(u8::is_ascii_whitespace) {
        return Err(err(
            HookCode::HookStdinEmpty,
            "standard input is empty",
            json!({"bytes_read": buf.len()}),
        ));
    }
    Ok(buf)
}

/// Decodes the byte-order mark and parses exactly one JSON object.
pub fn parse_payload(bytes: &[u8]) -> Result<Map<String, Value>, InputError> {
    let text: String = if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        utf8(rest)?
    } else if let Some(rest) = bytes.strip_prefix(b"\xFF\xFE") {
        utf16(rest, u16::from_le_bytes)?
    } else if let Some(rest) = bytes.strip_prefix(b"\xFE\xFF") {
        utf16(rest, u16::from_be_bytes)?
    } else {
        utf8(bytes)?
    };
    let value = crate::json::parse_strict_str(&text).map_err(|e| {
        err(
            HookCode::HookJsonInvalid,
            format!("standard input is not one JSON value: {}", e.message),
            json!({"line": e.line, "column": e.column}),
        )
    })?;
    match value {
        Value::Object(m) => Ok(m),
        other => Err(err(
            HookCode::HookPayloadInvalid,
            "the payload is not a JSON object",
            json!({"type": type_name(&other)}),
        )),
    }
}

fn utf8(bytes: &[u8]) -> Result<String, InputError> {
    String::from_utf8(bytes.to_vec()).map_err(|e| {
        err(
            HookCode::HookJsonInvalid,
            "standard input is not valid UTF-8",
            json!({"offset": e.utf8_error().valid_up_to()}),
        )
    })
}

fn utf16(bytes: &[u8], f: fn([u8; 2]) -> u16) -> Result<String, InputError> {
    if !bytes.len().is_multiple_of(2) {
        return Err(err(
            HookCode::HookJsonInvalid,
            "UTF-16 input has an odd number of bytes",
            json!({"bytes": bytes.len()}),
        ));
    }
    let units: Vec<u16> = bytes.chunks_exact(2).map(|c| f([c[0], c[1]])).collect();
    String::from_utf16(&units).map_err(|_| {
        err(
            HookCode::HookJsonInvalid,
            "standard input is not valid UTF-16",
            json!({"bytes": bytes.len()}),
        )
    })
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_and_empties() {
        let big = [b' '; 11];
        assert_eq!(
            read_stdin(&mut &big[..], 10).unwrap_err().code,
            HookCode::HookStdinTooLarge
        );
        assert_eq!(
            read_stdin(&mut &b" \n\t"[..], 10).unwrap_err().code,
            HookCode::HookStdinEmpty
        );
        assert_eq!(read_stdin(&mut &b"{}"[..], 2).unwrap(), b"{}");
    }

    #[test]
    fn boms_and_shapes() {
        assert!(parse_payload(b"\xEF\xBB\xBF{\"a\":1}").is_ok());
        let utf16: Vec<u8> = [0xFF, 0xFE]
            .into_iter()
            .chain("{\"a\":1}".encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        assert_eq!(parse_payload(&utf16).unwrap()["a"], 1);
        let be: Vec<u8> = [0xFE, 0xFF]
            .into_iter()
            .chain("{}".encode_utf16().flat_map(u16::to_be_bytes))
            .collect();
        assert!(parse_payload(&be).is_ok());
        for bad in [&b"{} {}"[..], b"{\"a\":1,\"a\":2}", b"\xff{}", b"{"] {
            assert_eq!(
                parse_payload(bad).unwrap_err().code,
                HookCode::HookJsonInvalid
            );
        }
        assert_eq!(
            parse_payload(b"[1]").unwrap_err().code,
            HookCode::HookPayloadInvalid
        );
    }
}
