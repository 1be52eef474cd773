//! The report's tables in Markdown (`summary.md`), the plots linked as
//! their SVG files. Pure.

use std::fmt::Write;

use super::doc::{
    CLAIM_HEADS, INVALID_HEADS, ROW_HEADS, Report, claim_cells, facts, headline, invalid_cells,
    row_cells,
};

/// Text made safe for a Markdown table cell: no line breaks, `|` and the
/// emphasis and link characters escaped, `<` as an entity.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '|' | '*' | '_' | '`' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The whole summary.
pub fn render(report: &Report) -> String {
    let mut m = String::from("# rightsize lab report\n\n");
    if let Some(line) = headline(report) {
        let _ = writeln!(m, "**{}**\n", escape(&line));
    }
    for (name, value) in facts(report) {
        let _ = writeln!(m, "- {name}: {}", escape(&value));
    }
    m.push('\n');
    for note in &report.notes {
        let _ = writeln!(m, "{}\n", escape(note));
    }
    if !report.claims.is_empty() {
        m.push_str("## Claims\n\n");
        table(
            &mut m,
            &CLAIM_HEADS,
            report.claims.iter().map(|c| claim_cells(c).to_vec()),
        );
    }
    for s in &report.sections {
        let _ = writeln!(
            m,
            "## {} (scenario {})\n",
            escape(&s.title),
            escape(&s.name)
        );
        for para in s.about.split("\n\n").filter(|p| !p.trim().is_empty()) {
            let _ = writeln!(m, "{}\n", escape(para.trim()));
        }
        for p in &s.plots {
            let _ = writeln!(m, "- [{}]({}.svg)", escape(&p.title), p.stem);
        }
        if !s.plots.is_empty() {
            m.push('\n');
        }
        table(
            &mut m,
            &ROW_HEADS,
            s.rows.iter().map(|r| row_cells(r).to_vec()),
        );
        if s.invalid.is_empty() {
            m.push_str("No invalid or failed runs.\n\n");
        } else {
            m.push_str("Invalid or failed runs (left out of the statistics):\n\n");
            table(
                &mut m,
                &INVALID_HEADS,
                s.invalid.iter().map(|r| invalid_cells(r).to_vec()),
            );
        }
        for n in &s.notes {
            let _ = writeln!(m, "- {}", escape(n));
        }
        if !s.notes.is_empty() {
            m.push('\n');
        }
    }
    m
}

fn table(m: &mut String, heads: &[&str], rows: impl Iterator<Item = Vec<String>>) {
    let _ = writeln!(m, "| {} |", heads.join(" | "));
    let _ = writeln!(m, "|{}", "---|".repeat(heads.len()));
    for cells in rows {
        let cells: Vec<String> = cells.iter().map(|c| escape(c)).collect();
        let _ = writeln!(m, "| {} |", cells.join(" | "));
    }
    m.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_cells() {
        assert_eq!(escape("a|b *c* <d>\nx_y"), "a\\|b \\*c\\* &lt;d> x\\_y");
    }
}
