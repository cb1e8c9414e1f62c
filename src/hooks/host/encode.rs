//! Encode tables (docs/hook-contracts.md#h-2) with strict key allow-lists: the encoder
//! serialises per-host structs whose fields are the only keys it can emit.
//! Allow is no output on every host; `{}` is never written (agy reads it as
//! deny on PreToolUse).

use serde::Serialize;

use super::Host;
use crate::hooks::event::{Decision, Family};
use crate::rules::hooks::AgyStopDecision;

/// Codex / Claude Code / `common`, stop family.
#[derive(Serialize)]
struct CodexStop<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(rename = "systemMessage", skip_serializing_if = "Option::is_none")]
    system_message: Option<&'a str>,
}

/// Codex / Claude Code, UserPromptSubmit context.
#[derive(Serialize)]
struct CodexPrompt<'a> {
    #[serde(rename = "hookSpecificOutput")]
    hook_specific_output: PromptContext<'a>,
}

#[derive(Serialize)]
struct PromptContext<'a> {
    #[serde(rename = "hookEventName")]
    hook_event_name: &'static str,
    #[serde(rename = "additionalContext")]
    additional_context: &'a str,
}

/// Codex / Claude Code, PreToolUse deny.
#[derive(Serialize)]
struct CodexTool<'a> {
    #[serde(rename = "hookSpecificOutput")]
    hook_specific_output: ToolDeny<'a>,
}

#[derive(Serialize)]
struct ToolDeny<'a> {
    #[serde(rename = "hookEventName")]
    hook_event_name: &'static str,
    #[serde(rename = "permissionDecision")]
    permission_decision: &'static str,
    #[serde(rename = "permissionDecisionReason")]
    permission_decision_reason: &'a str,
}

/// Gemini CLI (every event).
#[derive(Serialize)]
struct Gemini<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(rename = "systemMessage", skip_serializing_if = "Option::is_none")]
    system_message: Option<&'a str>,
    #[serde(rename = "hookSpecificOutput", skip_serializing_if = "Option::is_none")]
    hook_specific_output: Option<PromptContext<'a>>,
}

/// agy.
#[derive(Serialize)]
struct Agy<'a> {
    decision: &'static str,
    reason: &'a str,
}

/// Options of the encoder that come from the rules.
#[derive(Debug, Clone, Copy)]
pub struct EncodeOptions {
    /// `hooks.max_reason_bytes`.
    pub max_reason_bytes: usize,
    /// `hooks.hosts.agy.stop_block_decision`.
    pub agy_stop_block: AgyStopDecision,
}

/// What the hook writes and how it exits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// One compact JSON object plus `\n` on standard output, exit 0.
    Stdout(Vec<u8>),
    /// The plain reason plus `\n` on standard error, exit 2: Claude Code's
    /// Stop/SubagentStop block. Claude delivers a JSON `decision: "block"`
    /// to the model twice and raises a "stop hook problem" notice; exit 2
    /// delivers the reason once (hosts-headless.md, measured).
    Exit2(Vec<u8>),
}

impl Output {
    /// The bytes written, whichever stream.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Output::Stdout(b) | Output::Exit2(b) => b,
        }
    }
}

/// The output of a decision, or `None` for no output. A decision the family
/// cannot carry encodes to no output.
pub fn encode(
    host: Host,
    family: Family,
    decision: &Decision,
    opts: &EncodeOptions,
) -> Option<Output> {
    let cap = |s: &str| cap_bytes(&sanitize(s), opts.max_reason_bytes);
    let json = match (host, family, decision) {
        (_, _, Decision::Allow) => return None,
        // Claude Code ignores stdout under exit 2, so a Halt's user message
        // rides in the reason (as on agy).
        (Host::ClaudeCode, Family::Stop, Decision::Block { reason }) => {
            let mut b = non_empty(cap(reason)).into_bytes();
            b.push(b'\n');
            return Some(Output::Exit2(b));
        }
        (Host::ClaudeCode, Family::Stop, Decision::Halt { reason, message }) => {
            let mut b = non_empty(cap(&format!("{reason}\n{message}"))).into_bytes();
            b.push(b'\n');
            return Some(Output::Exit2(b));
        }
        (Host::Codex | Host::ClaudeCode | Host::Common, Family::Stop, d) => match d {
            Decision::Notify { message } => to_json(&CodexStop {
                decision: None,
                reason: None,
                system_message: Some(&cap(message)),
            }),
            Decision::Block { reason } => to_json(&CodexStop {
                decision: Some("block"),
                reason: Some(&non_empty(cap(reason))),
                system_message: None,
            }),
            Decision::Halt { reason, message } => to_json(&CodexStop {
                decision: Some("block"),
                reason: Some(&non_empty(cap(reason))),
                system_message: Some(&cap(message)),
            }),
            _ => return None,
        },
        (
            Host::Codex | Host::ClaudeCode | Host::Common,
            Family::Prompt,
            Decision::Context { text },
        ) => to_json(&CodexPrompt {
            hook_specific_output: PromptContext {
                hook_event_name: "UserPromptSubmit",
                additional_context: &sanitize(text),
            },
        }),
        (
            Host::Codex | Host::ClaudeCode | Host::Common,
            Family::Tool,
            Decision::Deny { reason },
        ) => to_json(&CodexTool {
            hook_specific_output: ToolDeny {
                hook_event_name: "PreToolUse",
                permission_decision: "deny",
                permission_decision_reason: &non_empty(cap(reason)),
            },
        }),
        (Host::Gemini, Family::Stop, Decision::Notify { message }) => to_json(&Gemini {
            decision: None,
            reason: None,
            system_message: Some(&cap(message)),
            hook_specific_output: None,
        }),
        (Host::Gemini, Family::Stop, Decision::Block { reason: r })
        | (Host::Gemini, Family::Tool, Decision::Deny { reason: r }) => to_json(&Gemini {
            decision: Some("deny"),
            reason: Some(&non_empty(cap(r))),
            system_message: None,
            hook_specific_output: None,
        }),
        (Host::Gemini, Family::Stop, Decision::Halt { reason, message }) => to_json(&Gemini {
            decision: Some("deny"),
            reason: Some(&non_empty(cap(reason))),
            system_message: Some(&cap(message)),
            hook_specific_output: None,
        }),
        (Host::Gemini, Family::Prompt, Decision::Context { text }) => to_json(&Gemini {
            decision: None,
            reason: None,
            system_message: None,
            hook_specific_output: Some(PromptContext {
                hook_event_name: "BeforeAgent",
                additional_context: &sanitize(text),
            }),
        }),
        (Host::Agy, Family::Stop, Decision::Block { reason }) => to_json(&Agy {
            decision: opts.agy_stop_block.as_str(),
            reason: &non_empty(cap(reason)),
        }),
        // agy has no user-visible message field: the reason carries both.
        (Host::Agy, Family::Stop, Decision::Halt { reason, message }) => to_json(&Agy {
            decision: opts.agy_stop_block.as_str(),
            reason: &non_empty(cap(&format!("{reason}\n{message}"))),
        }),
        (Host::Agy, Family::Tool, Decision::Deny { reason }) => to_json(&Agy {
            decision: "deny",
            reason: &non_empty(cap(reason)),
        }),
        _ => return None,
    };
    let mut bytes = json;
    bytes.push(b'\n');
    Some(Output::Stdout(bytes))
}

fn to_json<T: Serialize>(v: &T) -> Vec<u8> {
    serde_json::to_vec(v).expect("encoder structs serialise")
}

/// Codex fails a block with an empty reason; ours are never empty.
fn non_empty(s: String) -> String {
    if s.trim().is_empty() {
        format!(
            "evidence-gate: refused without a stated reason; {}",
            crate::hooks::diagnostics::SEE
        )
    } else {
        s
    }
}

/// Removes C0 controls other than `\n` and `\t`; `\r\n` and `\r` become `\n`.
pub fn sanitize(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {}
            c => out.push(c),
        }
    }
    out
}

/// Cuts `s` to at most `max` bytes at a character boundary.
pub fn cap_bytes(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const OPTS: EncodeOptions = EncodeOptions {
        max_reason_bytes: 2048,
        agy_stop_block: AgyStopDecision::Block,
    };

    fn keys(bytes: &[u8]) -> Vec<String> {
        fn walk(v: &Value, prefix: &str, out: &mut Vec<String>) {
            if let Value::Object(m) = v {
                for (k, v) in m {
                    let key = format!("{prefix}{k}");
                    walk(v, &format!("{key}."), out);
                    out.push(key);
                }
            }
        }
        let v: Value = serde_json::from_slice(bytes).unwrap();
        let mut out = Vec::new();
        walk(&v, "", &mut out);
        out.sort();
        out
    }

    fn stdout(out: Option<Output>) -> String {
        match out {
            Some(Output::Stdout(b)) => String::from_utf8(b).unwrap(),
            other => panic!("not JSON on stdout: {other:?}"),
        }
    }

    fn all_decisions() -> Vec<Decision> {
        vec![
            Decision::Allow,
            Decision::Notify {
                message: "m".into(),
            },
            Decision::Block { reason: "r".into() },
            Decision::Halt {
                reason: "r".into(),
                message: "m".into(),
            },
            Decision::Deny { reason: "r".into() },
            Decision::Context { text: "t".into() },
        ]
    }

    /// A block on a fault in hook state carries the user's `systemMessage`
    /// where the host has one (docs/threat-model.md#i2); agy's reason carries both.
    #[test]
    fn a_halt_blocks_and_tells_the_user() {
        let halt = Decision::Halt {
            reason: "r".into(),
            message: "m".into(),
        };
        let out = |h| stdout(encode(h, Family::Stop, &halt, &OPTS));
        assert_eq!(
            out(Host::Codex),
            "{\"decision\":\"block\",\"reason\":\"r\",\"systemMessage\":\"m\"}\n"
        );
        assert_eq!(
            out(Host::Gemini),
            "{\"decision\":\"deny\",\"reason\":\"r\",\"systemMessage\":\"m\"}\n"
        );
        assert_eq!(
            out(Host::Agy),
            "{\"decision\":\"block\",\"reason\":\"r\\nm\"}\n"
        );
        // Claude Code ignores stdout under exit 2: the message rides in the
        // reason, as on agy.
        assert_eq!(
            encode(Host::ClaudeCode, Family::Stop, &halt, &OPTS),
            Some(Output::Exit2(b"r\nm\n".to_vec()))
        );
    }

    /// Claude Code's Stop/SubagentStop block is exit 2 with the plain reason
    /// on stderr (a JSON block reaches the model twice); every other host and
    /// every other Claude decision stays JSON on stdout.
    #[test]
    fn claude_stop_blocks_exit_2_with_the_reason_on_stderr() {
        let block = Decision::Block {
            reason: "a\r\nb\u{1}c".into(),
        };
        assert_eq!(
            encode(Host::ClaudeCode, Family::Stop, &block, &OPTS),
            Some(Output::Exit2(b"a\nbc\n".to_vec()))
        );
        let empty = Decision::Block { reason: " ".into() };
        let Some(Output::Exit2(b)) = encode(Host::ClaudeCode, Family::Stop, &empty, &OPTS) else {
            panic!("an exit-2 block");
        };
        assert!(
            String::from_utf8(b)
                .unwrap()
                .starts_with("evidence-gate: refused")
        );
        let capped = Decision::Block {
            reason: "x".repeat(5000),
        };
        let Some(Output::Exit2(b)) = encode(Host::ClaudeCode, Family::Stop, &capped, &OPTS) else {
            panic!("an exit-2 block");
        };
        assert_eq!(b.len(), OPTS.max_reason_bytes + 1);
        for host in [Host::Codex, Host::Gemini, Host::Agy, Host::Common] {
            for d in all_decisions() {
                for family in [Family::Stop, Family::Prompt, Family::Tool] {
                    assert!(!matches!(
                        encode(host, family, &d, &OPTS),
                        Some(Output::Exit2(_))
                    ));
                }
            }
        }
        for d in all_decisions() {
            for family in [Family::Prompt, Family::Tool] {
                assert!(!matches!(
                    encode(Host::ClaudeCode, family, &d, &OPTS),
                    Some(Output::Exit2(_))
                ));
            }
        }
        assert!(matches!(
            encode(
                Host::ClaudeCode,
                Family::Stop,
                &Decision::Notify {
                    message: "n".into()
                },
                &OPTS
            ),
            Some(Output::Stdout(_))
        ));
    }

    /// Every key any encoder can emit, per host and family (docs/hook-contracts.md#h-2).
    fn allowed(host: Host, family: Family) -> &'static [&'static str] {
        match (host, family) {
            (Host::Codex | Host::ClaudeCode | Host::Common, Family::Stop) => {
                &["decision", "reason", "systemMessage"]
            }
            (Host::Codex | Host::ClaudeCode | Host::Common, Family::Prompt) => &[
                "hookSpecificOutput",
                "hookSpecificOutput.additionalContext",
                "hookSpecificOutput.hookEventName",
            ],
            (Host::Codex | Host::ClaudeCode | Host::Common, Family::Tool) => &[
                "hookSpecificOutput",
                "hookSpecificOutput.hookEventName",
                "hookSpecificOutput.permissionDecision",
                "hookSpecificOutput.permissionDecisionReason",
            ],
            (Host::Gemini, _) => &[
                "decision",
                "hookSpecificOutput",
                "hookSpecificOutput.additionalContext",
                "hookSpecificOutput.hookEventName",
                "reason",
                "systemMessage",
            ],
            (Host::Agy, _) => &["decision", "reason"],
        }
    }

    #[test]
    fn allow_lists_hold_and_allow_is_never_output() {
        let hosts = [
            Host::Codex,
            Host::ClaudeCode,
            Host::Gemini,
            Host::Agy,
            Host::Common,
        ];
        for host in hosts {
            for family in [Family::Stop, Family::Prompt, Family::Tool] {
                for d in all_decisions() {
                    let bytes = match encode(host, family, &d, &OPTS) {
                        None => continue,
                        Some(Output::Exit2(b)) => {
                            assert_eq!((host, family), (Host::ClaudeCode, Family::Stop));
                            assert!(b.ends_with(b"\n"));
                            continue;
                        }
                        Some(Output::Stdout(b)) => b,
                    };
                    assert_ne!(d, Decision::Allow);
                    assert!(bytes.ends_with(b"\n"));
                    assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
                    assert_ne!(&bytes[..], b"{}\n", "{host:?} {family:?} {d:?}");
                    for k in keys(&bytes) {
                        assert!(
                            allowed(host, family).contains(&k.as_str()),
                            "{host:?} {family:?} {d:?} emitted {k}"
                        );
                    }
                    let v: Value = serde_json::from_slice(&bytes).unwrap();
                    if let Some(dec) = v.get("decision") {
                        assert!(["block", "deny"].contains(&dec.as_str().unwrap()));
                    }
                }
            }
        }
    }

    #[test]
    fn snapshots() {
        let block = Decision::Block {
            reason: "a\r\nb\u{1}c".into(),
        };
        let s = |h, f, d: &Decision| stdout(encode(h, f, d, &OPTS));
        assert_eq!(
            s(Host::Codex, Family::Stop, &block),
            "{\"decision\":\"block\",\"reason\":\"a\\nbc\"}\n"
        );
        assert_eq!(
            s(Host::Gemini, Family::Stop, &block),
            "{\"decision\":\"deny\",\"reason\":\"a\\nbc\"}\n"
        );
        let continue_opts = EncodeOptions {
            agy_stop_block: AgyStopDecision::Continue,
            ..OPTS
        };
        assert_eq!(
            stdout(encode(Host::Agy, Family::Stop, &block, &continue_opts)),
            "{\"decision\":\"continue\",\"reason\":\"a\\nbc\"}\n"
        );
        let notify = Decision::Notify {
            message: "n".into(),
        };
        assert_eq!(
            s(Host::ClaudeCode, Family::Stop, &notify),
            "{\"systemMessage\":\"n\"}\n"
        );
        assert_eq!(encode(Host::Agy, Family::Stop, &notify, &OPTS), None);
        assert_eq!(
            s(
                Host::Codex,
                Family::Tool,
                &Decision::Deny {
                    reason: "no".into()
                }
            ),
            "{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"permissionDecision\":\"deny\",\"permissionDecisionReason\":\"no\"}}\n"
        );
        assert_eq!(
            s(
                Host::Codex,
                Family::Prompt,
                &Decision::Context { text: "t".into() }
            ),
            "{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":\"t\"}}\n"
        );
        let empty = Decision::Block { reason: " ".into() };
        assert!(s(Host::Codex, Family::Stop, &empty).contains("evidence-gate: refused"));
    }

    #[test]
    fn cap_cuts_at_char_boundary() {
        assert_eq!(cap_bytes("aé", 2), "a");
        assert_eq!(cap_bytes("abc", 5), "abc");
    }
}
