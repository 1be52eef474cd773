//! What a browser made of the report, judged: did every plot render, and
//! is the screenshot more than a blank page? [`browser`](super::browser)
//! runs headless Chromium twice, once with [`PROBE_SCRIPT`] in a copy of
//! the page (the DOM it dumps says where each plot was laid out and
//! whether it was drawn) and once for a screenshot of the page itself;
//! this module reads both. Pure: bytes in, verdict out.
//!
//! A plot counts as rendered when the browser laid out its `<svg>` or
//! `<img>` in a `<figure>` with a real size, the element has drawn
//! content (an SVG with child elements, an image decoded), and the
//! screenshot shows plot-like pixels in its box: at least
//! [`MIN_PLOT_COLOURS`] distinct colours and [`MIN_PLOT_INK`] of the box
//! not white. A white or one-colour box (an SVG the browser could not
//! paint, a missing image) fails both.

use std::collections::HashSet;
use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;

/// Distinct colours a plot's box must hold. Axes, grid, anti-aliased
/// text and one series already give hundreds; a blank box has one.
pub const MIN_PLOT_COLOURS: usize = 8;
/// Share of a plot's box that must not be white (any channel below
/// [`WHITE_LEVEL`]). The fixture's sparsest plot (one point, two lines,
/// the grid) covers about 4%; an empty box 0.
pub const MIN_PLOT_INK: f64 = 0.01;
/// Distinct colours the whole screenshot must hold, plots or not.
pub const MIN_PAGE_COLOURS: usize = 8;
/// Distinct colours are counted up to this many (enough to tell a plot
/// from a blank box, and cheap on a page of millions of pixels).
pub const COLOUR_COUNT_CAP: usize = 256;
/// A channel at or above this is white enough to be paper.
pub const WHITE_LEVEL: u8 = 240;
/// Smallest laid-out plot side, CSS pixels: a collapsed element is not a plot.
pub const MIN_PLOT_SIDE_PX: f64 = 16.0;

/// The id of the element [`PROBE_SCRIPT`] writes its findings into.
pub const PROBE_ID: &str = "rightsize-probe";

/// Runs after the page loaded; appends `<pre id="rightsize-probe">` with
/// JSON: the page's size, its `<svg>`/`<img>` count, and for each
/// `<figure>` its first `<svg>` or `<img>`, the element's box (page
/// coordinates, CSS pixels) and whether it has drawn content.
pub const PROBE_SCRIPT: &str = r#"<script>
addEventListener("load", function () {
  var plots = [];
  document.querySelectorAll("figure").forEach(function (f) {
    var e = f.querySelector("svg, img");
    if (!e) { plots.push({tag: null, x: 0, y: 0, w: 0, h: 0, drawn: false}); return; }
    var r = e.getBoundingClientRect();
    var drawn = e instanceof HTMLImageElement
      ? e.complete && e.naturalWidth > 0 && e.naturalHeight > 0
      : e instanceof SVGSVGElement && e.childElementCount > 0;
    plots.push({tag: e.tagName.toLowerCase(), x: r.left + scrollX, y: r.top + scrollY,
                w: r.width, h: r.height, drawn: drawn});
  });
  var d = document.documentElement;
  var out = document.createElement("pre");
  out.id = "rightsize-probe";
  out.textContent = JSON.stringify({page_w: d.scrollWidth, page_h: d.scrollHeight,
    elements: document.querySelectorAll("svg, img").length, plots: plots});
  document.body.appendChild(out);
});
</script>
"#;

/// `html` with [`PROBE_SCRIPT`] before its last `</body>` (or at the end).
pub fn with_probe(html: &str) -> String {
    let at = html.rfind("</body>").unwrap_or(html.len());
    let mut out = String::with_capacity(html.len() + PROBE_SCRIPT.len());
    out.push_str(&html[..at]);
    out.push_str(PROBE_SCRIPT);
    out.push_str(&html[at..]);
    out
}

/// What [`PROBE_SCRIPT`] found.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Probe {
    /// The page's laid-out width and height, CSS pixels.
    pub page_w: f64,
    pub page_h: f64,
    /// `<svg>` and `<img>` elements anywhere in the page.
    pub elements: usize,
    /// One per `<figure>`, in page order.
    pub plots: Vec<ProbePlot>,
}

/// One `<figure>`'s plot element as the browser laid it out.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ProbePlot {
    /// `svg` or `img`; none when the figure holds neither.
    pub tag: Option<String>,
    /// Its box in page coordinates, CSS pixels.
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    /// An SVG with child elements, or an image that decoded.
    pub drawn: bool,
}

/// The probe's findings from the DOM Chromium dumped (`--dump-dom`).
pub fn parse_probe(dom: &str) -> Result<Probe, String> {
    let open = format!("<pre id=\"{PROBE_ID}\">");
    let start = dom
        .find(&open)
        .map(|i| i + open.len())
        .ok_or("the page's DOM has no probe output: the page did not finish loading")?;
    let len = dom[start..]
        .find("</pre>")
        .ok_or("the probe output is cut short")?;
    let json = unescape(&dom[start..start + len]);
    serde_json::from_str(&json).map_err(|e| format!("the probe output {json:?}: {e}"))
}

/// Text content as a DOM serialiser escapes it.
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// A decoded screenshot, composited on white: RGB, row by row.
#[derive(Clone, PartialEq, Eq)]
pub struct Pixels {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<[u8; 3]>,
}

impl fmt::Debug for Pixels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pixels({}x{})", self.width, self.height)
    }
}

/// Largest screenshot decoded, bytes (a 1200 x 32768 RGBA page is 157 MB).
const MAX_DECODED_BYTES: usize = 256 << 20;

/// Decodes a PNG of any colour type and depth to 8-bit RGB on white.
pub fn decode_png(bytes: &[u8]) -> Result<Pixels, String> {
    let limits = png::Limits {
        bytes: MAX_DECODED_BYTES,
    };
    let mut decoder = png::Decoder::new_with_limits(bytes, limits);
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).map_err(|e| e.to_string())?;
    let channels = match info.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Err("an indexed PNG left unexpanded".into()),
    };
    let on_white = |v: u8, a: u8| (u16::from(v) * u16::from(a) / 255 + 255 - u16::from(a)) as u8;
    let rgb = buf[..info.buffer_size()]
        .chunks_exact(info.line_size)
        .flat_map(|row| row[..info.width as usize * channels].chunks_exact(channels))
        .map(|p| match *p {
            [g] => [g; 3],
            [g, a] => [on_white(g, a); 3],
            [r, g, b] => [r, g, b],
            [r, g, b, a] => [on_white(r, a), on_white(g, a), on_white(b, a)],
            _ => [255; 3],
        })
        .collect();
    Ok(Pixels {
        width: info.width,
        height: info.height,
        rgb,
    })
}

/// What a box of the screenshot holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ink {
    /// Distinct RGB colours, up to [`COLOUR_COUNT_CAP`].
    pub colours: usize,
    /// Share of the pixels that are not white (0 to 1).
    pub share: f64,
    /// Pixels looked at (the box clipped to the image).
    pub pixels: u64,
}

/// The ink in the box at (`x`, `y`), `w` x `h` pixels, clipped to the image.
pub fn ink(img: &Pixels, x: f64, y: f64, w: f64, h: f64) -> Ink {
    let clip = |v: f64, max: u32| (v.max(0.0).round() as u64).min(u64::from(max)) as usize;
    let (x0, x1) = (clip(x, img.width), clip(x + w, img.width));
    let (y0, y1) = (clip(y, img.height), clip(y + h, img.height));
    let mut colours = HashSet::new();
    let mut inked = 0u64;
    let mut pixels = 0u64;
    for row in y0..y1 {
        let start = row * img.width as usize;
        for p in &img.rgb[start + x0..start + x1] {
            if colours.len() < COLOUR_COUNT_CAP {
                colours.insert(*p);
            }
            inked += u64::from(p.iter().any(|&c| c < WHITE_LEVEL));
            pixels += 1;
        }
    }
    Ink {
        colours: colours.len(),
        share: if pixels == 0 {
            0.0
        } else {
            inked as f64 / pixels as f64
        },
        pixels,
    }
}

/// One plot of the page, as the browser showed it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotSeen {
    /// What the DOM said.
    pub probe: ProbePlot,
    /// What the screenshot shows in its box (none without a box).
    pub ink: Option<Ink>,
    /// Why it does not count as rendered; none when it does.
    pub problem: Option<String>,
}

/// The verdict on one plot.
pub fn judge_plot(probe: &ProbePlot, img: &Pixels) -> PlotSeen {
    let sized = probe.w >= MIN_PLOT_SIDE_PX && probe.h >= MIN_PLOT_SIDE_PX;
    let ink = sized.then(|| ink(img, probe.x, probe.y, probe.w, probe.h));
    let inside = probe.y + probe.h <= f64::from(img.height) + 1.0;
    let problem = match (&probe.tag, ink) {
        (None, _) => Some("the figure holds no <svg> or <img>".to_owned()),
        (Some(tag), None) => Some(format!(
            "its <{tag}> was laid out {:.0} x {:.0} px",
            probe.w, probe.h
        )),
        (Some(tag), Some(_)) if !probe.drawn => Some(match tag.as_str() {
            "img" => "its image did not decode".to_owned(),
            _ => format!("its <{tag}> has nothing drawn in it"),
        }),
        (Some(_), Some(_)) if !inside => Some(format!(
            "it ends at y = {:.0} px, below the screenshot ({} px tall)",
            probe.y + probe.h,
            img.height
        )),
        (Some(_), Some(i)) if i.colours < MIN_PLOT_COLOURS || i.share < MIN_PLOT_INK => {
            Some(format!(
                "its box in the screenshot is blank: {} colour(s), {:.2}% not white \
                 (a plot has at least {MIN_PLOT_COLOURS} and {:.0}%)",
                i.colours,
                100.0 * i.share,
                100.0 * MIN_PLOT_INK
            ))
        }
        _ => None,
    };
    PlotSeen {
        probe: probe.clone(),
        ink,
        problem,
    }
}

/// What the browser check found.
#[derive(Debug, Clone, PartialEq)]
pub struct BrowserCheck {
    /// The browser that rendered the page (`--version`).
    pub browser: String,
    /// Plots the report holds (what the caller expected).
    pub plots_expected: usize,
    /// `<svg>` and `<img>` elements in the page as the browser parsed it.
    pub elements: usize,
    /// Every `<figure>`'s plot, in page order.
    pub plots: Vec<PlotSeen>,
    /// The page's laid-out size, CSS pixels (the screenshot is 1:1).
    pub page_px: (u32, u32),
    /// The screenshot file and its size in pixels.
    pub screenshot: PathBuf,
    pub screenshot_px: (u32, u32),
    /// Distinct colours in the whole screenshot.
    pub page_colours: usize,
}

impl BrowserCheck {
    /// Plots the browser showed.
    pub fn plots_rendered(&self) -> usize {
        self.plots.iter().filter(|p| p.problem.is_none()).count()
    }

    /// Everything that is wrong, one sentence each; empty when the page
    /// showed every plot.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.plots.len() != self.plots_expected {
            out.push(format!(
                "the page has {} plot figure(s), the report {}",
                self.plots.len(),
                self.plots_expected
            ));
        }
        if self.page_colours < MIN_PAGE_COLOURS {
            out.push(format!(
                "the screenshot is blank: {} colour(s)",
                self.page_colours
            ));
        }
        for (i, p) in self.plots.iter().enumerate() {
            if let Some(why) = &p.problem {
                out.push(format!("plot {}: {why}", i + 1));
            }
        }
        out
    }

    /// Every expected plot rendered and the page is not blank.
    pub fn passed(&self) -> bool {
        self.problems().is_empty()
    }
}

/// The verdict on the page from the probe's findings and the screenshot.
pub fn judge(
    probe: &Probe,
    img: &Pixels,
    plots_expected: usize,
    browser: String,
    screenshot: PathBuf,
) -> BrowserCheck {
    BrowserCheck {
        browser,
        plots_expected,
        elements: probe.elements,
        plots: probe.plots.iter().map(|p| judge_plot(p, img)).collect(),
        page_px: (probe.page_w.round() as u32, probe.page_h.round() as u32),
        screenshot,
        screenshot_px: (img.width, img.height),
        page_colours: ink(img, 0.0, 0.0, f64::from(img.width), f64::from(img.height)).colours,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn white(width: u32, height: u32) -> Pixels {
        Pixels {
            width,
            height,
            rgb: vec![[255; 3]; (width * height) as usize],
        }
    }

    /// A plot-like box: a frame and a ramp of colours.
    fn paint(img: &mut Pixels, x0: u32, y0: u32, w: u32, h: u32) {
        for y in y0..y0 + h {
            for x in x0..x0 + w {
                let edge = x == x0 || y == y0 + h - 1;
                let diagonal = (x - x0) * h / w == y0 + h - 1 - y;
                if edge || diagonal {
                    let c = ((x - x0) * 200 / w) as u8;
                    img.rgb[(y * img.width + x) as usize] = [c, 100, 200 - c];
                }
            }
        }
    }

    fn plot(x: f64, y: f64, w: f64, h: f64) -> ProbePlot {
        ProbePlot {
            tag: Some("svg".into()),
            x,
            y,
            w,
            h,
            drawn: true,
        }
    }

    #[test]
    fn probe_goes_before_the_end_of_the_body_and_reads_back() {
        let page = with_probe("<html><body><p>x</p></body></html>");
        assert!(page.starts_with("<html><body><p>x</p><script>"));
        assert!(page.ends_with("</script>\n</body></html>"));
        assert!(with_probe("<p>no body").starts_with("<p>no body<script>"));
        let dom = "<html><body><pre id=\"rightsize-probe\">{\"page_w\":1200,\"page_h\":900.5,\
                   \"elements\":2,\"plots\":[{\"tag\":\"img\",\"x\":1,\"y\":2,\"w\":3,\"h\":4,\
                   \"drawn\":false},{\"tag\":null,\"x\":0,\"y\":0,\"w\":0,\"h\":0,\"drawn\":false}]}\
                   </pre></body></html>";
        let probe = parse_probe(dom).expect("probe");
        assert_eq!(probe.elements, 2);
        assert_eq!(probe.plots[0].tag.as_deref(), Some("img"));
        assert_eq!(probe.plots[1].tag, None);
        let e = parse_probe("<html></html>").expect_err("none");
        assert!(e.contains("did not finish loading"), "{e}");
    }

    #[test]
    fn drawn_boxes_pass_and_blank_ones_say_why() {
        let mut img = white(300, 400);
        paint(&mut img, 10, 10, 200, 150);
        let probe = Probe {
            page_w: 300.0,
            page_h: 400.0,
            elements: 2,
            plots: vec![
                plot(10.0, 10.0, 200.0, 150.0),
                plot(10.0, 200.0, 200.0, 150.0),
            ],
        };
        let check = judge(&probe, &img, 2, "Chromium".into(), "s.png".into());
        assert_eq!(check.plots_rendered(), 1);
        let ink = check.plots[0].ink.expect("ink");
        assert!(
            ink.colours >= MIN_PLOT_COLOURS && ink.share >= MIN_PLOT_INK,
            "{ink:?}"
        );
        assert_eq!(ink.pixels, 200 * 150);
        let problems = check.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("plot 2: its box in the screenshot is blank: 1 colour(s)"));
        assert!(!check.passed());
    }

    #[test]
    fn each_way_a_plot_can_fail_is_named() {
        let mut img = white(300, 200);
        paint(&mut img, 0, 0, 300, 200);
        let why = |p: ProbePlot| judge_plot(&p, &img).problem.unwrap_or_default();
        let mut none = plot(0.0, 0.0, 300.0, 200.0);
        none.tag = None;
        assert!(why(none).contains("no <svg> or <img>"));
        assert!(why(plot(0.0, 0.0, 300.0, 0.0)).contains("laid out 300 x 0 px"));
        let mut undecoded = plot(0.0, 0.0, 300.0, 200.0);
        undecoded.tag = Some("img".into());
        undecoded.drawn = false;
        assert!(why(undecoded).contains("did not decode"));
        assert!(why(plot(0.0, 100.0, 300.0, 200.0)).contains("below the screenshot"));
        assert_eq!(why(plot(0.0, 0.0, 300.0, 200.0)), "");
    }

    #[test]
    fn a_missing_figure_and_a_blank_page_are_problems() {
        let probe = Probe {
            page_w: 10.0,
            page_h: 10.0,
            elements: 0,
            plots: Vec::new(),
        };
        let problems = judge(&probe, &white(10, 10), 3, String::new(), "s.png".into()).problems();
        assert_eq!(
            problems,
            [
                "the page has 0 plot figure(s), the report 3",
                "the screenshot is blank: 1 colour(s)"
            ]
        );
    }

    #[test]
    fn decodes_rgba_on_white() {
        let mut bytes = Vec::new();
        let mut enc = png::Encoder::new(&mut bytes, 2, 1);
        enc.set_color(png::ColorType::Rgba);
        enc.set_depth(png::BitDepth::Eight);
        enc.write_header()
            .and_then(|mut w| w.write_image_data(&[255, 0, 0, 255, 0, 0, 0, 0]))
            .expect("encode");
        let img = decode_png(&bytes).expect("decode");
        assert_eq!((img.width, img.height), (2, 1));
        assert_eq!(img.rgb, [[255, 0, 0], [255, 255, 255]]);
        assert!(decode_png(b"not a png").is_err());
    }
}
