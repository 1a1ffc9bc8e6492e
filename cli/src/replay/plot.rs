//! `--svg`: bytes reserved and live over a trace, as an SVG plot.
//!
//! The replay samples every event; [`Series`] keeps, per bucket of events,
//! the lowest and highest value of each line in the order they happened
//! (min/max decimation), so peaks and dips survive at any trace length while
//! the file stays small.

use plotters::prelude::*;
use streamcore_mock::replay::Sample;

use super::output::thousands;

/// Buckets across the x axis (two points each at most, per line).
const BUCKETS: u64 = 1200;

/// The series' colours (also what the process tests look for).
pub const RESERVED_COLOR: RGBColor = RGBColor(31, 119, 180);
/// Live bytes.
pub const LIVE_COLOR: RGBColor = RGBColor(44, 160, 44);
/// PyTorch's peak reserved.
pub const TORCH_RESERVED_COLOR: RGBColor = RGBColor(214, 39, 40);
/// PyTorch's peak allocated.
pub const TORCH_ALLOCATED_COLOR: RGBColor = RGBColor(255, 127, 14);

/// Lowest and highest value seen in one bucket, with the events they were
/// seen at.
#[derive(Copy, Clone, Debug)]
struct MinMax {
    min: (u64, u64),
    max: (u64, u64),
}

impl MinMax {
    fn new(event: u64, v: u64) -> Self {
        Self {
            min: (event, v),
            max: (event, v),
        }
    }

    fn add(&mut self, event: u64, v: u64) {
        if v < self.min.1 {
            self.min = (event, v);
        }
        if v > self.max.1 {
            self.max = (event, v);
        }
    }

    fn flush(&self, into: &mut Vec<(u64, u64)>) {
        let (first, second) = if self.min.0 <= self.max.0 {
            (self.min, self.max)
        } else {
            (self.max, self.min)
        };
        into.push(first);
        if second != first {
            into.push(second);
        }
    }
}

/// Reserved and live bytes over a replay, decimated.
#[derive(Clone, Debug)]
pub struct Series {
    width: u64,
    bucket: Option<(u64, MinMax, MinMax)>,
    /// (events done, bytes reserved).
    pub reserved: Vec<(u64, u64)>,
    /// (events done, bytes live).
    pub live: Vec<(u64, u64)>,
}

impl Series {
    /// A series for a replay of `events` events.
    pub fn new(events: u64) -> Self {
        Self {
            width: events.div_ceil(BUCKETS).max(1),
            bucket: None,
            reserved: vec![(0, 0)],
            live: vec![(0, 0)],
        }
    }

    /// Takes one sample (events arrive in order).
    pub fn push(&mut self, s: Sample) {
        let index = s.event.saturating_sub(1) / self.width;
        match &mut self.bucket {
            Some((i, r, l)) if *i == index => {
                r.add(s.event, s.reserved);
                l.add(s.event, s.live);
            }
            _ => {
                self.flush();
                self.bucket = Some((
                    index,
                    MinMax::new(s.event, s.reserved),
                    MinMax::new(s.event, s.live),
                ));
            }
        }
    }

    /// Closes the last bucket.
    pub fn finish(&mut self) {
        self.flush();
    }

    fn flush(&mut self) {
        if let Some((_, r, l)) = self.bucket.take() {
            r.flush(&mut self.reserved);
            l.flush(&mut self.live);
        }
    }
}

/// What the plot shows.
pub struct Plot<'a> {
    /// The caption.
    pub title: &'a str,
    /// Events in the trace (the x range).
    pub events: u64,
    /// Our lines.
    pub series: &'a Series,
    /// PyTorch's peak reserved in the recorded run (the trace header), drawn
    /// as a reference line.
    pub torch_reserved: Option<u64>,
    /// PyTorch's peak allocated in the recorded run, drawn as a reference
    /// line.
    pub torch_allocated: Option<u64>,
}

/// The unit the y axis is labelled in, chosen by the largest value.
fn unit(max: u64) -> (&'static str, f64) {
    const UNITS: [(&str, u32); 4] = [("GiB", 30), ("MiB", 20), ("KiB", 10), ("B", 0)];
    for (name, shift) in UNITS {
        if max >= 1 << shift {
            return (name, (1u64 << shift) as f64);
        }
    }
    ("B", 1.0)
}

/// Renders the plot as an SVG document.
pub fn render(plot: &Plot<'_>) -> Result<String, String> {
    let mut svg = String::new();
    draw(plot, &mut svg).map_err(|e| e.to_string())?;
    Ok(svg)
}

fn draw(plot: &Plot<'_>, svg: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let s = plot.series;
    let max = s
        .reserved
        .iter()
        .chain(&s.live)
        .map(|p| p.1)
        .chain(plot.torch_reserved)
        .chain(plot.torch_allocated)
        .max()
        .unwrap_or(0)
        .max(1);
    let (unit_name, scale) = unit(max);
    let y_max = max as f64 / scale * 1.3;
    let x_max = plot.events.max(1) as f64;
    let to_xy = |&(e, v): &(u64, u64)| (e as f64, v as f64 / scale);

    let root = SVGBackend::with_string(svg, (1000, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(plot.title, ("sans-serif", 20))
        .margin(16)
        .margin_right(32)
        .x_label_area_size(44)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..x_max, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("event")
        .y_desc(format!("bytes ({unit_name})"))
        .x_label_formatter(&|x| thousands(x.max(0.0) as u64))
        .y_label_formatter(&|y| match y_max >= 20.0 {
            true => format!("{y:.0}"),
            false => format!("{y:.1}"),
        })
        .max_light_lines(4)
        .light_line_style(RGBColor(240, 240, 240))
        .draw()?;

    chart
        .draw_series(LineSeries::new(
            s.reserved.iter().map(to_xy),
            RESERVED_COLOR.stroke_width(2),
        ))?
        .label("streamcore reserved (this replay)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 24, y)], RESERVED_COLOR.stroke_width(2)));
    chart
        .draw_series(LineSeries::new(
            s.live.iter().map(to_xy),
            LIVE_COLOR.stroke_width(1),
        ))?
        .label("live (the trace's own bytes)")
        .legend(|(x, y)| PathElement::new([(x, y), (x + 24, y)], LIVE_COLOR.stroke_width(2)));
    for (peak, color, label) in [
        (
            plot.torch_reserved,
            TORCH_RESERVED_COLOR,
            "PyTorch peak reserved (recorded run)",
        ),
        (
            plot.torch_allocated,
            TORCH_ALLOCATED_COLOR,
            "PyTorch peak allocated (recorded run)",
        ),
    ] {
        let Some(peak) = peak else { continue };
        let y = peak as f64 / scale;
        chart
            .draw_series(DashedLineSeries::new(
                [(0.0, y), (x_max, y)],
                10,
                6,
                color.stroke_width(2),
            ))?
            .label(label)
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 24, y)], color.stroke_width(2)));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.9))
        .border_style(RGBColor(160, 160, 160))
        .label_font(("sans-serif", 15))
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(event: u64, reserved: u64, live: u64) -> Sample {
        Sample {
            event,
            reserved,
            live,
        }
    }

    #[test]
    fn short_series_keep_every_point() {
        let mut s = Series::new(3);
        s.push(sample(1, 10, 5));
        s.push(sample(2, 10, 7));
        s.push(sample(3, 20, 2));
        s.finish();
        assert_eq!(s.reserved, [(0, 0), (1, 10), (2, 10), (3, 20)]);
        assert_eq!(s.live, [(0, 0), (1, 5), (2, 7), (3, 2)]);
    }

    #[test]
    fn long_series_keep_each_buckets_extremes_in_order() {
        let n = BUCKETS * 10;
        let mut s = Series::new(n);
        for e in 1..=n {
            // A spike of live bytes at one event only, a dip at another.
            let live = match e {
                4_321 => 1_000,
                7_777 => 0,
                _ => 100,
            };
            s.push(sample(e, e, live));
        }
        s.finish();
        assert!(s.reserved.len() <= 1 + 2 * BUCKETS as usize);
        assert!(s.live.contains(&(4_321, 1_000)), "the spike survives");
        assert!(s.live.contains(&(7_777, 0)), "the dip survives");
        assert_eq!(s.reserved.last(), Some(&(n, n)));
        assert!(s.reserved.windows(2).all(|w| w[0].0 < w[1].0), "in order");
    }

    #[test]
    fn units_follow_the_largest_value() {
        assert_eq!(unit(3 << 30).0, "GiB");
        assert_eq!(unit(5 << 20).0, "MiB");
        assert_eq!(unit(100).0, "B");
    }
}
