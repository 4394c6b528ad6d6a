//! The chat's screen and keyboard on the device (bin `chat-device`, docs/chat.md "On the
//! simulated Precursor"), kernel-free so that the host tests them:
//!
//! - [`LineEditor`]: bytes typed on the debug UART (through Precursor's keyboard block) to an
//!   input line; Enter submits, Backspace/DEL deletes, Ctrl-U clears; a line is at most
//!   [`MAX_TEXT`] bytes: a key past that is refused with a message, the line kept.
//! - [`Screen`]: the memory LCD as a grid of text rows (6 x 10 cells: 56 columns, 53 rows);
//!   only rows whose text changed are redrawn, so only their pixel lines are sent to the panel.
//!   Rows past the screen's bottom are not drawn (counted by the frame buffer as clipped).
//! - [`conversation_rows`]: the conversation wrapped to the width, a page at a time (a full
//!   page starts a new one, so a new message redraws one row, not the whole conversation).
//! - [`FrameStats`]: frame intervals (p99, worst) as the ticker row shows them.

use std::collections::VecDeque;

use memlcd::grid::{Glyphs, COLS, ROWS};
use memlcd::FrameBuffer;

use crate::party::MAX_TEXT;

/// What one typed byte did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// Enter on a non-empty line: the line (the editor is empty again).
    Submit(String),
    /// the line changed
    Edited,
    /// the key was refused (line full): why
    Refused(String),
    /// a byte that is no key of this editor (control bytes, non-ASCII)
    Ignored,
}

/// The input line.
#[derive(Debug, Default)]
pub struct LineEditor {
    line: String,
    pub refused: u64,
    pub ignored: u64,
}

impl LineEditor {
    pub fn line(&self) -> &str {
        &self.line
    }
    /// Put a line back (it could not be sent: e.g. the store was full).
    pub fn restore(&mut self, line: String) {
        self.line = line;
    }
    pub fn feed(&mut self, b: u8) -> Key {
        match b {
            b'\r' | b'\n' => {
                if self.line.trim().is_empty() {
                    self.line.clear();
                    Key::Edited
                } else {
                    Key::Submit(std::mem::take(&mut self.line))
                }
            }
            0x08 | 0x7f => {
                self.line.pop();
                Key::Edited
            }
            0x15 => {
                self.line.clear();
                Key::Edited
            }
            0x20..=0x7e => {
                if self.line.len() >= MAX_TEXT {
                    self.refused += 1;
                    Key::Refused(format!("line full ({MAX_TEXT} bytes): press Enter"))
                } else {
                    self.line.push(b as char);
                    Key::Edited
                }
            }
            _ => {
                self.ignored += 1;
                Key::Ignored
            }
        }
    }
}

/// Splits `text` into rows of at most `width` characters (at character boundaries).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    chars.chunks(width.max(1)).map(|c| c.iter().collect()).collect()
}

/// The conversation's rows for a region of `height` rows: every entry wrapped to `width`, the
/// page holding the newest row (pages of `height` rows: while a page fills, older rows stay
/// where they are).
pub fn conversation_rows(entries: &[String], width: usize, height: usize) -> Vec<String> {
    let all: Vec<String> = entries.iter().flat_map(|e| wrap(e, width)).collect();
    if height == 0 {
        return Vec::new();
    }
    let start = if all.is_empty() { 0 } else { (all.len() - 1) / height * height };
    let mut rows: Vec<String> = all[start..].to_vec();
    rows.resize(height, String::new());
    rows
}

/// The memory LCD as text rows; redraws only what changed.
pub struct Screen {
    glyphs: Glyphs,
    shown: Vec<Option<String>>,
    pub fb: FrameBuffer,
}

impl Default for Screen {
    fn default() -> Self {
        Self::new()
    }
}

impl Screen {
    pub const COLS: usize = COLS;
    pub const ROWS: usize = ROWS;

    pub fn new() -> Screen {
        Screen { glyphs: Glyphs::new(), shown: vec![None; ROWS], fb: FrameBuffer::new() }
    }

    /// Draw `rows` (row i at text row i; past [`Self::ROWS`] not drawn and counted as clipped
    /// pixels); returns how many rows were redrawn. Each row is cut at [`Self::COLS`].
    pub fn show(&mut self, rows: &[String]) -> usize {
        rows.iter().enumerate().filter(|(i, r)| self.show_row(*i, r)).count()
    }

    /// Draw text row `i` if it changed (as [`Self::show`] does for each row); whether it was
    /// redrawn.
    pub fn show_row(&mut self, i: usize, r: &str) -> bool {
        // compared without a copy: most rows are unchanged most frames
        let cut: &str = match r.char_indices().nth(COLS) {
            Some((at, _)) => &r[..at],
            None => r,
        };
        if i < ROWS && self.shown[i].as_deref() == Some(cut) {
            return false;
        }
        self.glyphs.draw_row(&mut self.fb, i, cut);
        if i < ROWS {
            self.shown[i] = Some(cut.to_string());
        }
        true
    }

    /// Text row `row` as the frame buffer holds it (trailing blanks trimmed).
    pub fn read_row(&self, row: usize) -> String {
        self.glyphs.read_row(&self.fb, row).trim_end().to_string()
    }
}

/// Frame intervals (ms) of the last `keep` frames.
#[derive(Debug)]
pub struct FrameStats {
    intervals: VecDeque<f64>,
    /// the same intervals, sorted (kept in order as they come and go: the p99 shown every
    /// frame is an index, not a sort of 300 values)
    sorted: Vec<f64>,
    keep: usize,
    pub frames: u64,
    pub worst: f64,
}

impl FrameStats {
    pub fn new(keep: usize) -> FrameStats {
        FrameStats { intervals: VecDeque::new(), sorted: Vec::new(), keep: keep.max(1), frames: 0, worst: 0.0 }
    }
    pub fn push(&mut self, ms: f64) {
        self.frames += 1;
        if self.intervals.len() == self.keep {
            if let Some(old) = self.intervals.pop_front() {
                let i = self.sorted.partition_point(|v| v.total_cmp(&old).is_lt());
                self.sorted.remove(i);
            }
        }
        self.intervals.push_back(ms);
        let i = self.sorted.partition_point(|v| v.total_cmp(&ms).is_le());
        self.sorted.insert(i, ms);
        self.worst = self.worst.max(ms);
    }
    pub fn last(&self) -> f64 {
        self.intervals.back().copied().unwrap_or(0.0)
    }
    /// The 99th percentile (nearest rank) of the kept intervals.
    pub fn p99(&self) -> f64 {
        if self.sorted.is_empty() {
            return 0.0;
        }
        let rank = ((0.99 * self.sorted.len() as f64).ceil() as usize).clamp(1, self.sorted.len());
        self.sorted[rank - 1]
    }
}

/// Nearest-rank 99th percentile (0 for no values).
pub fn p99(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = ((0.99 * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(e: &mut LineEditor, s: &[u8]) -> Vec<Key> {
        s.iter().map(|&b| e.feed(b)).collect()
    }

    #[test]
    fn editor_keys_submit_edit_and_ignore() {
        let mut e = LineEditor::default();
        let k = feed(&mut e, b"helo\x7fp\x08lo\r");
        assert_eq!(k.last(), Some(&Key::Submit("hello".into())));
        assert_eq!(e.line(), "");
        // empty and blank lines are not submitted; Ctrl-U clears; control bytes are ignored
        assert_eq!(feed(&mut e, b"  \r"), vec![Key::Edited, Key::Edited, Key::Edited]);
        assert_eq!(feed(&mut e, b"abc\x15"), vec![Key::Edited; 4]);
        assert_eq!(e.line(), "");
        assert_eq!(e.feed(0x1b), Key::Ignored);
        assert_eq!(e.feed(0xc3), Key::Ignored);
        assert_eq!(e.ignored, 2);
    }

    #[test]
    fn an_overlong_line_is_refused_past_the_limit_and_nothing_typed_is_lost() {
        let mut e = LineEditor::default();
        let typed: Vec<u8> = (0..MAX_TEXT + 40).map(|i| b'a' + (i % 26) as u8).collect();
        let keys = feed(&mut e, &typed);
        assert!(keys[..MAX_TEXT].iter().all(|k| *k == Key::Edited));
        assert!(keys[MAX_TEXT..].iter().all(|k| matches!(k, Key::Refused(m) if m.contains("line full"))));
        assert_eq!(e.refused, 40);
        assert_eq!(e.line().as_bytes(), &typed[..MAX_TEXT]);
        // the full line is still sent whole, and is a valid chat text
        let Key::Submit(line) = e.feed(b'\r') else { panic!("not submitted") };
        assert_eq!(line.len(), MAX_TEXT);
    }

    #[test]
    fn a_burst_of_keys_is_taken_in_order() {
        // keys typed faster than the UI reads them wait in the keyboard's FIFO and the
        // reader's queue: fed in one go, every line comes out whole and in order
        let mut e = LineEditor::default();
        let burst: Vec<u8> = (1..=50).flat_map(|i| format!("line {i}\r").into_bytes()).collect();
        let lines: Vec<String> = feed(&mut e, &burst)
            .into_iter()
            .filter_map(|k| if let Key::Submit(l) = k { Some(l) } else { None })
            .collect();
        assert_eq!(lines, (1..=50).map(|i| format!("line {i}")).collect::<Vec<_>>());
    }

    #[test]
    fn screen_redraws_only_changed_rows_and_reads_back() {
        let mut s = Screen::new();
        let rows: Vec<String> = (0..Screen::ROWS).map(|i| format!("row {i}")).collect();
        assert_eq!(s.show(&rows), Screen::ROWS);
        s.fb.mark_clean();
        let mut next = rows.clone();
        next[7] = "changed".into();
        assert_eq!(s.show(&next), 1);
        assert_eq!(s.fb.dirty_lines().collect::<Vec<_>>(), (70..80).collect::<Vec<_>>());
        assert_eq!(s.read_row(7), "changed");
        assert_eq!(s.read_row(8), "row 8");
        // a row longer than the screen is cut at the edge
        next[9] = "y".repeat(100);
        s.show(&next);
        assert_eq!(s.read_row(9), "y".repeat(Screen::COLS));
    }

    #[test]
    fn rows_below_the_screen_are_clipped_not_drawn() {
        let mut s = Screen::new();
        let rows: Vec<String> = (0..Screen::ROWS + 3).map(|i| format!("row {i}")).collect();
        s.show(&rows);
        // 53 rows of 10 lines = 530 lines; row 53 has 6 lines on the panel, rows 54-55 none
        assert_eq!(s.fb.clipped(), (4 + 10 + 10) * memlcd::WIDTH as u64);
        assert_eq!(s.read_row(Screen::ROWS - 1), format!("row {}", Screen::ROWS - 1));
    }

    #[test]
    fn conversation_pages_and_wraps() {
        let e: Vec<String> = (0..5).map(|i| format!("m{i}")).collect();
        assert_eq!(conversation_rows(&e, 10, 3), vec!["m3".to_string(), "m4".into(), "".into()]);
        assert_eq!(conversation_rows(&e[..3], 10, 3), vec!["m0".to_string(), "m1".into(), "m2".into()]);
        assert_eq!(conversation_rows(&[], 10, 2), vec![String::new(), String::new()]);
        assert_eq!(wrap("abcdefg", 3), vec!["abc", "def", "g"]);
        assert_eq!(conversation_rows(&["abcdefg".into()], 3, 4), vec!["abc", "def", "g", ""]);
    }

    #[test]
    fn frame_stats_p99() {
        let mut f = FrameStats::new(100);
        for i in 0..100 {
            f.push(if i == 50 { 90.0 } else { 33.0 });
        }
        assert_eq!(f.p99(), 33.0);
        f.push(95.0);
        assert_eq!(f.p99(), 90.0);
        assert_eq!(f.worst, 95.0);
        assert_eq!(p99(vec![]), 0.0);
    }

    /// The kept sorted copy gives the same p99 as sorting the window, as intervals come and
    /// the oldest go (equal values among them).
    #[test]
    fn frame_stats_p99_matches_a_sort_of_the_window() {
        let mut f = FrameStats::new(50);
        let mut window = VecDeque::new();
        let mut x = 12345u64;
        for _ in 0..1000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let ms = 30.0 + ((x >> 33) % 40) as f64 / 4.0;
            f.push(ms);
            window.push_back(ms);
            if window.len() > 50 {
                window.pop_front();
            }
            assert_eq!(f.p99(), p99(window.iter().copied().collect()));
        }
    }
}
