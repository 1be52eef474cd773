//! The report as one HTML file that reads offline: the plots are inline
//! SVG, the style is inline, nothing is fetched. Every text from the
//! directory is escaped. Pure.

use std::fmt::Write;

use super::doc::{
    CLAIM_HEADS, INVALID_HEADS, ROW_HEADS, Report, RunFiles, Section, claim_cells, facts, headline,
    invalid_cells, row_cells,
};
use super::figure::size_label;

/// `&`, `<`, `>`, `"` and `'` as entities.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0;font-size:90%}\
th,td{border:1px solid #bbb;padding:3px 7px;text-align:left;vertical-align:top}\
th{background:#eee}td.n{text-align:right;white-space:nowrap}\
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}\
.headline{font-size:115%;font-weight:bold}.holds{color:#176a17}.fails{color:#a11}.note{color:#555}dt{font-weight:bold;float:left;width:7em}dd{margin-left:8em}";

/// The whole page.
pub fn render(report: &Report) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<title>rightsize lab report</title>\n");
    let _ = writeln!(h, "<style>{STYLE}</style>\n</head>\n<body>");
    h.push_str("<h1>rightsize lab report</h1>\n");
    if let Some(line) = headline(report) {
        let _ = writeln!(h, "<p class=\"headline\">{}</p>", escape(&line));
    }
    h.push_str("<dl>\n");
    for (name, value) in facts(report) {
        let _ = writeln!(h, "<dt>{}</dt><dd>{}</dd>", escape(name), escape(&value));
    }
    h.push_str("</dl>\n");
    for note in &report.notes {
        let _ = writeln!(h, "<p class=\"note\">{}</p>", escape(note));
    }
    if report.sections.len() > 1 {
        h.push_str("<ul>\n");
        for s in &report.sections {
            let _ = writeln!(
                h,
                "<li><a href=\"#{}\">{}</a></li>",
                escape(&s.name),
                escape(&s.title)
            );
        }
        h.push_str("</ul>\n");
    }
    if !report.claims.is_empty() {
        h.push_str("<h2>Claims</h2>\n");
        let rows = report.claims.iter().map(|c| {
            let class = match c.verdict {
                super::table::Verdict::Holds => "holds",
                super::table::Verdict::DoesNotHold => "fails",
                super::table::Verdict::NotMeasured => "",
            };
            (claim_cells(c).to_vec(), class)
        });
        table(&mut h, &CLAIM_HEADS, rows);
    }
    for s in &report.sections {
        section(&mut h, s);
    }
    h.push_str("</body>\n</html>\n");
    h
}

fn section(h: &mut String, s: &Section) {
    let _ = writeln!(
        h,
        "<h2 id=\"{}\">{}</h2>",
        escape(&s.name),
        escape(&s.title)
    );
    let _ = writeln!(h, "<p class=\"note\">scenario {}</p>", escape(&s.name));
    for para in s.about.split("\n\n").filter(|p| !p.trim().is_empty()) {
        let _ = writeln!(h, "<p>{}</p>", escape(para.trim()));
    }
    for p in &s.plots {
        let _ = writeln!(
            h,
            "<figure>\n{}\n<figcaption>{} (<a href=\"{stem}.svg\">SVG</a>, <a href=\"{stem}.png\">PNG</a>)</figcaption>\n</figure>",
            p.svg.trim(),
            escape(&p.title),
            stem = escape(&p.stem)
        );
    }
    h.push_str("<h3>Results</h3>\n");
    table(
        h,
        &ROW_HEADS,
        s.rows.iter().map(|r| (row_cells(r).to_vec(), "")),
    );
    if s.invalid.is_empty() {
        h.push_str("<p>No invalid or failed runs.</p>\n");
    } else {
        h.push_str("<h3>Invalid or failed runs (left out of the statistics)</h3>\n");
        table(
            h,
            &INVALID_HEADS,
            s.invalid.iter().map(|r| (invalid_cells(r).to_vec(), "")),
        );
    }
    telemetry_links(h, s);
    if !s.notes.is_empty() {
        h.push_str("<ul class=\"note\">\n");
        for n in &s.notes {
            let _ = writeln!(h, "<li>{}</li>", escape(n));
        }
        h.push_str("</ul>\n");
    }
}

/// Each run's telemetry files, linked (the report sits in the lab
/// directory's `report/`), folded away.
fn telemetry_links(h: &mut String, s: &Section) {
    let with_files: Vec<&RunFiles> = s
        .telemetry
        .iter()
        .filter(|r| r.client.is_some() || r.server.is_some())
        .collect();
    if with_files.is_empty() {
        return;
    }
    let _ = writeln!(
        h,
        "<details><summary>Telemetry of each run ({}): JSON lines, a sample every interval and the tuner's decisions</summary>\n<ul>",
        with_files.len()
    );
    for r in with_files {
        let link = |name: &str, file: &Option<String>| {
            file.as_ref().map_or_else(String::new, |f| {
                format!(" <a href=\"../{}\">{name}</a>", escape(f))
            })
        };
        let _ = writeln!(
            h,
            "<li>{} rep {} ({}, {}{}):{}{}</li>",
            escape(&r.tuner),
            r.rep,
            escape(&r.variant),
            size_label(r.size_bytes as f64),
            if r.valid { "" } else { ", invalid" },
            link("receiver", &r.client),
            link("sender", &r.server)
        );
    }
    h.push_str("</ul>\n</details>\n");
}

/// A table; each row with a CSS class for its last cell ("" for none).
fn table<'a>(h: &mut String, heads: &[&str], rows: impl Iterator<Item = (Vec<String>, &'a str)>) {
    h.push_str("<table>\n<tr>");
    for head in heads {
        let _ = write!(h, "<th>{}</th>", escape(head));
    }
    h.push_str("</tr>\n");
    for (cells, class) in rows {
        h.push_str("<tr>");
        let last = cells.len().saturating_sub(1);
        for (i, c) in cells.iter().enumerate() {
            let numeric = c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '≥');
            match (i == last && !class.is_empty(), numeric) {
                (true, _) => {
                    let _ = write!(h, "<td class=\"{class}\">{}</td>", escape(c));
                }
                (false, true) => {
                    let _ = write!(h, "<td class=\"n\">{}</td>", escape(c));
                }
                (false, false) => {
                    let _ = write!(h, "<td>{}</td>", escape(c));
                }
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::super::doc::PlotOut;
    use super::super::stats::mean_ci;
    use super::super::table::{ClaimRow, InvalidRun, ReachSummary, Row, Verdict};
    use super::*;
    use crate::layout::LabInfo;
    use crate::scenario::Plot;

    fn report() -> Report {
        Report {
            lab: LabInfo::new("6.1".into(), 0, true, vec!["lab".into(), "<run>".into()]),
            runs_total: 4,
            sections: vec![Section {
                name: "lfn".into(),
                title: "Long & fat".into(),
                about: "First.\n\nSecond <b>.".into(),
                plots: vec![PlotOut {
                    plot: Plot::GoodputVsSize,
                    stem: "lfn-goodput-vs-size".into(),
                    title: "goodput".into(),
                    svg: "<svg width=\"1\"></svg>\n".into(),
                }],
                rows: vec![Row {
                    variant: "path".into(),
                    tuner: "auto".into(),
                    size_bytes: 1 << 20,
                    shortened_to_bytes: None,
                    n_valid: 3,
                    n: 4,
                    goodput_mbps: mean_ci(&[10.0, 12.0, 14.0]),
                    peak_rcvbuf_bytes: Some(4_194_304.0),
                    peak_sndbuf_bytes: None,
                    bytes_retrans: Some(0.0),
                    mbps_per_mb: None,
                    reach: ReachSummary::default(),
                }],
                invalid: vec![InvalidRun {
                    variant: "path".into(),
                    tuner: "auto".into(),
                    size_bytes: 1 << 20,
                    rep: 4,
                    run_dir: "lfn/path/auto-rep4".into(),
                    why: "failed checks: idle_rtt".into(),
                }],
                notes: vec!["a <note>".into()],
                telemetry: vec![
                    RunFiles {
                        variant: "path".into(),
                        tuner: "auto".into(),
                        size_bytes: 1 << 20,
                        rep: 1,
                        valid: true,
                        client: Some("lfn/path/auto-rep1/client.jsonl".into()),
                        server: Some("lfn/path/auto-rep1/1-retr.jsonl".into()),
                    },
                    RunFiles {
                        variant: "path".into(),
                        tuner: "auto".into(),
                        size_bytes: 1 << 20,
                        rep: 4,
                        valid: false,
                        client: None,
                        server: None,
                    },
                ],
            }],
            claims: vec![ClaimRow {
                scenario: "lfn".into(),
                seed: "drsFTP paper".into(),
                text: "auto > stock".into(),
                published: 5.0,
                holds_at_least: 2.0,
                measured: Some(6.0),
                at: Some(("path".into(), 1 << 20)),
                verdict: Verdict::Holds,
            }],
            notes: Vec::new(),
        }
    }

    #[test]
    fn page_holds_everything_escaped() {
        let page = render(&report());
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("<svg width=\"1\"></svg>"));
        assert!(page.contains("<h2 id=\"lfn\">Long &amp; fat</h2>"));
        assert!(page.contains("<p>Second &lt;b&gt;.</p>"));
        assert!(page.contains("<td class=\"n\">3 of 4</td><td class=\"n\">12.00 ± 4.97</td>"));
        assert!(page.contains("<td class=\"n\">4.19 MB</td><td>—</td><td class=\"n\">0 MB</td>"));
        assert!(page.contains(
            "<p class=\"headline\">Long &amp; fat: fastest auto at 12.00 Mbit/s; 1 MiB, path</p>"
        ));
        // Runs with telemetry are linked from the report's directory.
        assert!(page.contains(
            "<li>auto rep 1 (path, 1 MiB): <a href=\"../lfn/path/auto-rep1/client.jsonl\">receiver</a> <a href=\"../lfn/path/auto-rep1/1-retr.jsonl\">sender</a></li>"
        ));
        assert!(page.contains("Telemetry of each run (1)") && !page.contains("auto rep 4"));
        assert!(page.contains("failed checks: idle_rtt"));
        assert!(page.contains("<td class=\"holds\">holds</td>"));
        assert!(page.contains("<th>source</th>") && page.contains("<td>drsFTP paper</td>"));
        assert!(page.contains("lab &lt;run&gt;") && page.contains("quick"));
        assert!(page.contains("<li>a &lt;note&gt;</li>"));
    }

    #[test]
    fn markdown_has_the_same_cells() {
        let md = super::super::markdown::render(&report());
        assert!(md.contains(
            "| path | auto | 1 MiB | 3 of 4 | 12.00 ± 4.97 | 4.19 MB | — | 0 MB | — | — |"
        ));
        assert!(md.contains("- [goodput](lfn-goodput-vs-size.svg)"));
        assert!(md.contains("**Long & fat: fastest auto at 12.00 Mbit/s; 1 MiB, path**"));
        assert!(md.contains(
            "| lfn | drsFTP paper | auto > stock | 5.00 | 6.00 (path, 1 MiB) | ≥ 2.00 | holds |"
        ));
    }

    #[test]
    fn the_headline_compares_auto_with_the_kernel_where_both_ran() {
        let mut r = report();
        let mut kernel = r.sections[0].rows[0].clone();
        kernel.tuner = "kernel".into();
        kernel.goodput_mbps = mean_ci(&[24.0]);
        kernel.peak_rcvbuf_bytes = Some(33_554_432.0);
        r.sections[0].rows.push(kernel);
        assert_eq!(
            super::super::doc::headline(&r).as_deref(),
            Some(
                "Long & fat: auto made 12.00 Mbit/s, 0.50 x the kernel's autotuning (24.00 Mbit/s) \
                 with 4.19 MB of peak receive buffer against 33.55 MB (0.12 x); 1 MiB, path"
            )
        );
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href='x'>\"R&D\"</a>"),
            "&lt;a href=&#39;x&#39;&gt;&quot;R&amp;D&quot;&lt;/a&gt;"
        );
    }
}
