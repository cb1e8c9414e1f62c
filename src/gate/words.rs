//! How gate messages show values and lists.

/// A value as shown in a message: control characters escaped, clipped.
pub(crate) fn shown(s: &str) -> String {
    let escaped: String = s.escape_debug().collect();
    if escaped.chars().count() > 120 {
        let mut t: String = escaped.chars().take(120).collect();
        t.push('…');
        t
    } else {
        escaped
    }
}

/// `a`, `a or b`, `a, b or c`.
pub(crate) fn one_of(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}
