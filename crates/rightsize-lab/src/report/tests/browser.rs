//! The fixture's report opened in headless Chromium: every plot rendered,
//! the screenshot not blank. Needs `chromium-headless-shell`
//! (scripts/setup installs it); without it this fails, naming the package.

use std::time::Instant;

use crate::report::browser::check_report;
use crate::report::fixture::synthetic_dir;
use crate::report::make_report;
use crate::report::rendered::{MIN_PLOT_COLOURS, MIN_PLOT_INK};
use crate::scenario::PLOTS;

#[test]
fn every_plot_of_the_report_renders_in_chromium() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    synthetic_dir(dir);
    let files = make_report(dir).expect("report");
    assert_eq!(files.figures, PLOTS.len());
    let shot = dir.join("report/screenshot.png");
    let started = Instant::now();
    let check =
        check_report(&files.index_html, &shot, files.figures).unwrap_or_else(|e| panic!("{e}"));
    let took = started.elapsed();
    assert!(check.passed(), "{:#?}\n{:?}", check.problems(), check);
    assert_eq!(check.plots_rendered(), PLOTS.len());
    assert_eq!(check.elements, PLOTS.len());
    assert!(check.browser.starts_with("Chromium"), "{}", check.browser);
    // The whole page in one image, 1:1, every plot inside it.
    assert_eq!(check.screenshot_px, check.page_px);
    assert!(
        check.page_px.1 > 560 * PLOTS.len() as u32,
        "{:?}",
        check.page_px
    );
    for p in &check.plots {
        let ink = p.ink.expect("ink");
        assert_eq!((p.probe.w, p.probe.h), (960.0, 560.0), "{p:?}");
        assert!(
            ink.colours >= 4 * MIN_PLOT_COLOURS && ink.share >= 2.0 * MIN_PLOT_INK,
            "{p:?}"
        );
    }
    assert!(std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0) > 10_000);
    // The probe's copy of the page is gone; only the screenshot was added.
    let mut names: Vec<String> = std::fs::read_dir(dir.join("report"))
        .expect("ls")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| !n.ends_with(".svg") && !n.ends_with(".png"))
        .collect();
    names.sort();
    assert_eq!(names, ["index.html", "summary.md"]);
    // Two page loads of about a second each: printed, not asserted (a busy
    // host is slow, not wrong).
    eprintln!("the browser check took {took:?}");
}

/// The check fails a page whose plots did not render, and says which and
/// why: a good plot, an image that does not decode, an empty SVG, a
/// figure with no plot in it.
#[test]
fn plots_that_did_not_render_are_named() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path();
    synthetic_dir(dir);
    let files = make_report(dir).expect("report");
    let html = std::fs::read_to_string(&files.index_html).expect("html");
    let good = &html[html.find("<figure>").expect("figure")..];
    let good = &good[..good.find("</figure>").expect("end") + "</figure>".len()];
    let page = format!(
        "<!DOCTYPE html>\n<html><body>{good}\
         <figure><img src=\"data:image/png;base64,AAAAAAAA\" width=\"960\" height=\"560\"></figure>\
         <figure><svg width=\"960\" height=\"560\" xmlns=\"http://www.w3.org/2000/svg\"></svg></figure>\
         <figure><p>no plot</p></figure></body></html>\n"
    );
    let index = dir.join("report/broken.html");
    std::fs::write(&index, page).expect("write");
    let check =
        check_report(&index, &dir.join("report/broken.png"), 5).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(check.plots_rendered(), 1, "{check:?}");
    let problems = check.problems();
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert_eq!(problems[0], "the page has 4 plot figure(s), the report 5");
    assert_eq!(problems[1], "plot 2: its image did not decode");
    assert_eq!(problems[2], "plot 3: its <svg> has nothing drawn in it");
    assert_eq!(problems[3], "plot 4: the figure holds no <svg> or <img>");
}
