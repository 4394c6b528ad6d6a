//! Precursor's memory LCD: 336 x 536 pixels, one bit each (docs/sim.md, "memlcd").
//!
//! [`FrameBuffer`] is the block's frame-buffer layout in ordinary memory, drawn with
//! embedded-graphics (`BinaryColor::On` is a dark pixel): line y at word 11 y, pixel x in bit
//! x % 32 of word x / 32, 1 light and 0 dark, bit 16 of word 10 the line's dirty bit (the layout
//! xous-core's graphics server uses on Precursor). Drawing marks the lines it touches dirty; a
//! pixel outside the screen is not drawn and is counted ([`FrameBuffer::clipped`]), never a
//! panic. On Xous, [`device::Memlcd`] maps the block and sends the dirty lines to the panel.

use core::convert::Infallible;
use embedded_graphics::pixelcolor::BinaryColor;
use embedded_graphics::prelude::{DrawTarget, OriginDimensions, Pixel, Size};

/// Pixels per line.
pub const WIDTH: usize = 336;
/// Lines.
pub const LINES: usize = 536;
/// 32-bit words per line (336 pixels in 10.5 words; the upper half of the last holds the
/// dirty bit).
pub const WORDS_PER_LINE: usize = 11;
/// Words of the whole frame buffer (0x5C20 bytes).
pub const FB_WORDS: usize = WORDS_PER_LINE * LINES;
/// The dirty bit, in the last word of a line.
pub const DIRTY_BIT: u32 = 1 << 16;
/// The last word of a clean, light line.
const LAST_WORD_LIGHT: u32 = 0x0000_FFFF;

/// A frame buffer in Precursor's memlcd layout.
#[derive(Clone, PartialEq, Eq)]
pub struct FrameBuffer {
    words: Vec<u32>,
    /// The dirty bits again, one per line in a compact bitmap: finding the dirty lines reads
    /// 17 words instead of one word in each of 536 lines 44 bytes apart (on the device that
    /// scan missed the 4 KiB data cache at every line, about 0.2 ms each time)
    dirty: [u32; DIRTY_WORDS],
    clipped: u64,
}

/// Words of the dirty-line bitmap.
const DIRTY_WORDS: usize = LINES.div_ceil(32);

impl Default for FrameBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl core::fmt::Debug for FrameBuffer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FrameBuffer")
            .field("dirty_lines", &self.dirty_lines().count())
            .field("clipped", &self.clipped)
            .finish()
    }
}

impl FrameBuffer {
    /// All light, every line clean.
    pub fn new() -> Self {
        let mut words = vec![u32::MAX; FB_WORDS];
        for y in 0..LINES {
            words[y * WORDS_PER_LINE + WORDS_PER_LINE - 1] = LAST_WORD_LIGHT;
        }
        FrameBuffer { words, dirty: [0; DIRTY_WORDS], clipped: 0 }
    }

    /// Whether pixel (x, y) is dark; None outside the screen.
    pub fn is_dark(&self, x: usize, y: usize) -> Option<bool> {
        (x < WIDTH && y < LINES).then(|| self.words[y * WORDS_PER_LINE + x / 32] & (1 << (x % 32)) == 0)
    }

    /// Set pixel (x, y) dark or light and mark its line dirty. Outside the screen nothing is
    /// drawn, the pixel is counted in [`Self::clipped`] and false returned.
    pub fn set(&mut self, x: i64, y: i64, dark: bool) -> bool {
        if x < 0 || y < 0 || x as usize >= WIDTH || y as usize >= LINES {
            self.clipped += 1;
            return false;
        }
        let (x, y) = (x as usize, y as usize);
        let w = &mut self.words[y * WORDS_PER_LINE + x / 32];
        if dark {
            *w &= !(1 << (x % 32));
        } else {
            *w |= 1 << (x % 32);
        }
        self.mark_dirty(y);
        true
    }

    fn mark_dirty(&mut self, y: usize) {
        self.words[y * WORDS_PER_LINE + WORDS_PER_LINE - 1] |= DIRTY_BIT;
        self.dirty[y / 32] |= 1 << (y % 32);
    }

    /// Every line light and dirty.
    pub fn clear_screen(&mut self) {
        for y in 0..LINES {
            let line = &mut self.words[y * WORDS_PER_LINE..(y + 1) * WORDS_PER_LINE];
            line.fill(u32::MAX);
            line[WORDS_PER_LINE - 1] = LAST_WORD_LIGHT | DIRTY_BIT;
        }
        self.dirty = [u32::MAX; DIRTY_WORDS];
        self.dirty[DIRTY_WORDS - 1] = u32::MAX >> (DIRTY_WORDS * 32 - LINES);
    }

    /// Whether line y was drawn since the last [`Self::mark_clean`].
    pub fn is_dirty(&self, y: usize) -> bool {
        y < LINES && self.dirty[y / 32] & (1 << (y % 32)) != 0
    }

    /// The dirty lines, top to bottom.
    pub fn dirty_lines(&self) -> impl Iterator<Item = usize> + '_ {
        self.dirty.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            core::iter::from_fn(move || {
                (w != 0).then(|| {
                    let b = w.trailing_zeros() as usize;
                    w &= w - 1;
                    i * 32 + b
                })
            })
        })
    }

    /// Whether any line is dirty.
    pub fn any_dirty(&self) -> bool {
        self.dirty.iter().any(|&w| w != 0)
    }

    /// Clear every dirty bit (after the lines were sent).
    pub fn mark_clean(&mut self) {
        for i in 0..DIRTY_WORDS {
            let mut w = core::mem::take(&mut self.dirty[i]);
            while w != 0 {
                let y = i * 32 + w.trailing_zeros() as usize;
                w &= w - 1;
                self.words[y * WORDS_PER_LINE + WORDS_PER_LINE - 1] &= !DIRTY_BIT;
            }
        }
    }

    /// Clear line y's dirty bit (after it was sent); nothing outside the screen.
    pub fn mark_line_clean(&mut self, y: usize) {
        if y < LINES {
            self.words[y * WORDS_PER_LINE + WORDS_PER_LINE - 1] &= !DIRTY_BIT;
            self.dirty[y / 32] &= !(1 << (y % 32));
        }
    }

    /// Replace line y with `light` (words 0..=10, bit x % 32 of word x / 32 is pixel x, 1
    /// light; bits past the 336th ignored) and mark it dirty. A line outside the screen is not
    /// drawn: its 336 pixels are counted in [`Self::clipped`] and false returned.
    pub fn write_line(&mut self, y: usize, light: &[u32; WORDS_PER_LINE]) -> bool {
        if y >= LINES {
            self.clipped += WIDTH as u64;
            return false;
        }
        let line = &mut self.words[y * WORDS_PER_LINE..(y + 1) * WORDS_PER_LINE];
        line.copy_from_slice(light);
        line[WORDS_PER_LINE - 1] = (light[WORDS_PER_LINE - 1] & LAST_WORD_LIGHT) | DIRTY_BIT;
        self.dirty[y / 32] |= 1 << (y % 32);
        true
    }

    /// Pixels drawn outside the screen (not drawn) since creation.
    pub fn clipped(&self) -> u64 {
        self.clipped
    }

    /// The words of line y (dirty bit included), as the block reads them.
    pub fn line(&self, y: usize) -> &[u32] {
        &self.words[y * WORDS_PER_LINE..(y + 1) * WORDS_PER_LINE]
    }

    /// Every word, in the block's order.
    pub fn words(&self) -> &[u32] {
        &self.words
    }
}

impl OriginDimensions for FrameBuffer {
    fn size(&self) -> Size {
        Size::new(WIDTH as u32, LINES as u32)
    }
}

impl DrawTarget for FrameBuffer {
    type Color = BinaryColor;
    type Error = Infallible;

    fn draw_iter<I>(&mut self, pixels: I) -> Result<(), Infallible>
    where
        I: IntoIterator<Item = Pixel<BinaryColor>>,
    {
        for Pixel(p, c) in pixels {
            self.set(p.x as i64, p.y as i64, c.is_on());
        }
        Ok(())
    }
}

/// Text rendering and reading back, so that a check can find a line of text on the screen.
pub mod text {
    use super::FrameBuffer;
    use embedded_graphics::mono_font::{ascii::FONT_6X10, MonoFont, MonoTextStyle};
    use embedded_graphics::pixelcolor::BinaryColor;
    use embedded_graphics::prelude::*;
    use embedded_graphics::text::{Baseline, Text};

    /// The font every screen of this project uses.
    pub const FONT: &MonoFont<'static> = &FONT_6X10;

    /// Draw `s` with its top-left corner at (x, y), dark on light.
    pub fn draw(fb: &mut FrameBuffer, x: i32, y: i32, s: &str) {
        let style = MonoTextStyle::new(FONT, BinaryColor::On);
        let _ = Text::with_baseline(s, Point::new(x, y), style, Baseline::Top).draw(fb);
    }

    /// Read back the `n` characters at (x, y) by matching each cell against the font's
    /// printable ASCII glyphs; a cell that matches none reads as '?'.
    pub fn read(fb: &FrameBuffer, x: i32, y: i32, n: usize) -> String {
        let (w, h) =
            (FONT.character_size.width as i32 + FONT.character_spacing as i32, FONT.character_size.height as i32);
        let cell = |fb: &FrameBuffer, cx: i32, cy: i32| -> Vec<bool> {
            let mut v = Vec::with_capacity((w * h) as usize);
            for dy in 0..h {
                for dx in 0..w {
                    let (px, py) = (cx + dx, cy + dy);
                    v.push(px >= 0 && py >= 0 && fb.is_dark(px as usize, py as usize).unwrap_or(false));
                }
            }
            v
        };
        let mut glyphs = Vec::new();
        for c in ' '..='~' {
            let mut g = FrameBuffer::new();
            draw(&mut g, 0, 0, &c.to_string());
            glyphs.push((c, cell(&g, 0, 0)));
        }
        (0..n as i32)
            .map(|i| {
                let got = cell(fb, x + i * w, y);
                glyphs.iter().find(|(_, g)| *g == got).map(|(c, _)| *c).unwrap_or('?')
            })
            .collect()
    }
}

/// Text on a grid of character cells (the font's cell size), drawn a whole row at a time: a
/// row's lines are built word by word from the font's glyphs, taken once from the same
/// embedded-graphics font [`text::draw`] uses (so [`text::read`] reads them back).
pub mod grid {
    use super::{text, FrameBuffer, WIDTH, WORDS_PER_LINE};

    /// Cell width and height in pixels.
    pub const CELL_W: usize = 6;
    pub const CELL_H: usize = 10;
    /// Characters per row and rows on the screen.
    pub const COLS: usize = WIDTH / CELL_W;
    pub const ROWS: usize = super::LINES / CELL_H;

    /// The printable ASCII glyphs: per character, per pixel line, its dark pixels (bit dx).
    pub struct Glyphs {
        rows: Vec<[u8; CELL_H]>,
    }

    impl Default for Glyphs {
        fn default() -> Self {
            Self::new()
        }
    }

    impl Glyphs {
        pub fn new() -> Glyphs {
            debug_assert_eq!(text::FONT.character_size.width as usize + text::FONT.character_spacing as usize, CELL_W);
            debug_assert_eq!(text::FONT.character_size.height as usize, CELL_H);
            let mut rows = Vec::with_capacity(95);
            let mut fb = FrameBuffer::new();
            for c in ' '..='~' {
                text::draw(&mut fb, 0, 0, &c.to_string());
                let mut g = [0u8; CELL_H];
                for (dy, bits) in g.iter_mut().enumerate() {
                    for dx in 0..CELL_W {
                        if fb.is_dark(dx, dy) == Some(true) {
                            *bits |= 1 << dx;
                        }
                    }
                }
                rows.push(g);
                fb = FrameBuffer::new();
            }
            Glyphs { rows }
        }

        /// Draw `s` on text row `row` (its first COLS characters; the rest of the row light);
        /// a character outside printable ASCII is drawn as '?'. A row below the screen is not
        /// drawn (counted as clipped). Marks the row's lines dirty.
        pub fn draw_row(&self, fb: &mut FrameBuffer, row: usize, s: &str) {
            let chars: Vec<usize> = s
                .chars()
                .take(COLS)
                .map(|c| if (' '..='~').contains(&c) { c as usize - 32 } else { '?' as usize - 32 })
                .collect();
            for dy in 0..CELL_H {
                let mut words = [u32::MAX; WORDS_PER_LINE];
                for (i, &g) in chars.iter().enumerate() {
                    let bits = self.rows[g][dy];
                    if bits == 0 {
                        continue;
                    }
                    for dx in 0..CELL_W {
                        if bits & (1 << dx) != 0 {
                            let x = i * CELL_W + dx;
                            words[x / 32] &= !(1 << (x % 32));
                        }
                    }
                }
                fb.write_line(row * CELL_H + dy, &words);
            }
        }

        /// Read text row `row` back (COLS characters, trailing blanks kept); a cell that
        /// matches no glyph reads as '?'.
        pub fn read_row(&self, fb: &FrameBuffer, row: usize) -> String {
            (0..COLS)
                .map(|i| {
                    let mut g = [0u8; CELL_H];
                    for (dy, bits) in g.iter_mut().enumerate() {
                        for dx in 0..CELL_W {
                            if fb.is_dark(i * CELL_W + dx, row * CELL_H + dy) == Some(true) {
                                *bits |= 1 << dx;
                            }
                        }
                    }
                    self.rows.iter().position(|r| *r == g).map(|k| (k as u8 + 32) as char).unwrap_or('?')
                })
                .collect()
        }
    }
}

/// The screen check of the simulated Precursor: what apps/device-screen draws (x, y, text),
/// and the panel log the simulator writes, read back on the host (`cargo xtask sim-screen`).
pub mod check {
    use super::{FrameBuffer, LINES, WORDS_PER_LINE};

    /// The rows drawn; the last one runs off the right edge (its last character is clipped).
    pub const ROWS: &[(i32, i32, &str)] = &[
        (6, 6, "Precursor memlcd: 336 x 536, 1 bpp"),
        (6, 20, "drawn by a Xous process"),
        (6, 34, "X25519 2.77 ms  sw 73.2 ms"),
        (300, 48, "clipped"),
    ];

    /// The panel after every line of a panel log (`<cycle> <line> <words 10..0 as 88 hex
    /// digits>` per line sent, gateware/precursor/sim_memlcd_sink.v), starting light; and the
    /// number of lines sent. A malformed line is refused with its number.
    pub fn panel_from_log(log: &str) -> Result<(FrameBuffer, usize), String> {
        let mut fb = FrameBuffer::new();
        let mut sent = 0;
        for (i, row) in log.lines().enumerate() {
            let f: Vec<&str> = row.split(' ').collect();
            let bad = || format!("panel log line {}: malformed: {row:?}", i + 1);
            if f.len() != 3 || f[2].len() != 88 || f[0].parse::<u64>().is_err() {
                return Err(bad());
            }
            let y: usize = f[1].parse().map_err(|_| bad())?;
            if y >= LINES {
                return Err(format!("panel log line {}: line {y} is outside the panel", i + 1));
            }
            for w in 0..WORDS_PER_LINE {
                let hex = &f[2][88 - 8 * (w + 1)..88 - 8 * w];
                fb.words[y * WORDS_PER_LINE + w] = u32::from_str_radix(hex, 16).map_err(|_| bad())?;
            }
            // the block's dirty bit as the log recorded it is not the panel's: clean
            fb.words[y * WORDS_PER_LINE + WORDS_PER_LINE - 1] &= !super::DIRTY_BIT;
            sent += 1;
        }
        Ok((fb, sent))
    }
}

#[cfg(target_os = "xous")]
pub mod device {
    //! The memlcd block on Precursor (and the simulated Precursor): the frame buffer
    //! (`HW_MEMLCD_MEM`) and the register page (`HW_MEMLCD_BASE`) mapped into this process,
    //! as xous-core's graphics server maps them; addresses and fields from utralib (Precursor's
    //! SVD).
    use super::{FrameBuffer, FB_WORDS, LINES, WORDS_PER_LINE};
    use utralib::generated::{utra, CSR, HW_MEMLCD_BASE, HW_MEMLCD_MEM};

    /// The display, mapped.
    pub struct Memlcd {
        fb: *mut u32,
        csr: CSR<u32>,
        /// lines the last transfer sent: their dirty bits in the block's buffer are cleared
        /// before the next one (the block sends every line whose bit is set)
        sent: Vec<usize>,
    }

    /// Serial clocks per line the block sends (command, address, 336 pixels, trailer): the
    /// panel's time per line at the 2 MHz clock set by [`Memlcd::map`] is this times 0.5 us.
    pub const CLOCKS_PER_LINE: u64 = 352;

    impl Memlcd {
        /// Map the frame buffer and the registers; set the serial clock to 2 MHz at the
        /// 100 MHz system clock (prescaler 49, as the graphics server does). Fails if another
        /// process holds either (on Precursor: the graphics server).
        pub fn map() -> Result<Memlcd, xous::Error> {
            let len = (FB_WORDS * 4 + 4095) & !4095;
            let fb = xous::map_memory(
                xous::MemoryAddress::new(HW_MEMLCD_MEM),
                None,
                len,
                xous::MemoryFlags::R | xous::MemoryFlags::W,
            )?;
            let regs = xous::map_memory(
                xous::MemoryAddress::new(HW_MEMLCD_BASE),
                None,
                4096,
                xous::MemoryFlags::R | xous::MemoryFlags::W,
            )?;
            let mut csr = CSR::new(regs.as_mut_ptr() as *mut u32);
            csr.wfo(utra::memlcd::PRESCALER_PRESCALER, 49);
            Ok(Memlcd { fb: fb.as_mut_ptr() as *mut u32, csr, sent: Vec::new() })
        }

        /// Whether a transfer to the panel is running.
        pub fn busy(&self) -> bool {
            self.csr.rf(utra::memlcd::BUSY_BUSY) == 1
        }

        /// Copy `fb`'s dirty lines into the block's frame buffer (dirty bits set), send them to
        /// the panel (`UpdateDirty`), wait for the transfer, and mark `fb` clean; the block's
        /// dirty bits are cleared for the next update. Returns the number of lines sent.
        pub fn flush(&mut self, fb: &mut FrameBuffer) -> usize {
            while self.busy() {
                xous::yield_slice();
            }
            let n = self.start_flush(fb).unwrap_or(0);
            while self.busy() {
                xous::yield_slice();
            }
            self.settle();
            n
        }

        /// [`Self::flush`] without waiting: if the panel is free, clear the block's dirty bits
        /// of the lines the last transfer sent, copy `fb`'s dirty lines in, start sending them
        /// and return at once with their number (`Some(0)`: nothing was dirty). `None`: a
        /// transfer is still running; nothing was written and `fb` stays dirty (call again
        /// once [`Self::busy`] is false: the block raises no interrupt when it is done).
        pub fn start_flush(&mut self, fb: &mut FrameBuffer) -> Option<usize> {
            self.start_flush_some(fb, |_| true, usize::MAX)
        }

        /// [`Self::start_flush`] of some of the dirty lines: those `pick` takes, at most `max`
        /// of them, top to bottom (a transfer takes [`CLOCKS_PER_LINE`] serial clocks per
        /// line, so `max` bounds how long the panel stays busy); the others stay dirty in `fb`
        /// for a later transfer.
        pub fn start_flush_some(
            &mut self,
            fb: &mut FrameBuffer,
            pick: impl Fn(usize) -> bool,
            max: usize,
        ) -> Option<usize> {
            if self.busy() {
                return None;
            }
            self.settle();
            let dirty: Vec<usize> = fb.dirty_lines().filter(|&y| pick(y)).take(max).collect();
            for &y in &dirty {
                for (i, w) in fb.line(y).iter().enumerate() {
                    // SAFETY: y < LINES and i < WORDS_PER_LINE: inside the mapped buffer
                    unsafe { self.fb.add(y * WORDS_PER_LINE + i).write_volatile(*w) };
                }
            }
            if !dirty.is_empty() {
                self.csr.wfo(utra::memlcd::COMMAND_UPDATEDIRTY, 1);
            }
            for &y in &dirty {
                fb.mark_line_clean(y);
            }
            let n = dirty.len();
            self.sent = dirty;
            Some(n)
        }

        /// After a transfer: the dirty bits of the lines it sent cleared in the block's buffer
        /// (each line's last word read back, the bit cleared).
        fn settle(&mut self) {
            for &y in &self.sent {
                debug_assert!(y < LINES);
                let last = y * WORDS_PER_LINE + WORDS_PER_LINE - 1;
                // SAFETY: y < LINES: inside the mapped buffer
                unsafe {
                    let w = self.fb.add(last).read_volatile();
                    self.fb.add(last).write_volatile(w & !super::DIRTY_BIT);
                }
            }
            self.sent.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_rows_read_back_with_both_readers_and_rows_off_screen_are_clipped() {
        let g = grid::Glyphs::new();
        let mut fb = FrameBuffer::new();
        let s = "Hello, Bob! re 1: ~{}|";
        g.draw_row(&mut fb, 3, s);
        assert_eq!(g.read_row(&fb, 3).trim_end(), s);
        assert_eq!(text::read(&fb, 0, 30, s.len()), s);
        assert_eq!(fb.dirty_lines().collect::<Vec<_>>(), (30..40).collect::<Vec<_>>());
        // the same text through embedded-graphics gives the same pixels
        let mut eg = FrameBuffer::new();
        text::draw(&mut eg, 0, 30, s);
        // (pixels only: the grid marks all ten lines of the row dirty, embedded-graphics only
        // those it drew a dark pixel on)
        let pixels = |f: &FrameBuffer| f.words().iter().map(|w| w & !DIRTY_BIT).collect::<Vec<_>>();
        assert_eq!(pixels(&eg), pixels(&fb));
        // a long row is cut at COLS, a non-ASCII character reads '?'
        g.draw_row(&mut fb, 4, &"x".repeat(80));
        assert_eq!(g.read_row(&fb, 4), "x".repeat(grid::COLS));
        g.draw_row(&mut fb, 5, "caf\u{e9}");
        assert_eq!(g.read_row(&fb, 5).trim_end(), "caf?");
        // below the screen: nothing drawn, counted
        let before = fb.clipped();
        g.draw_row(&mut fb, grid::ROWS + 1, "gone");
        assert_eq!(fb.clipped(), before + 10 * WIDTH as u64);
        assert_eq!(g.read_row(&fb, grid::ROWS + 1).trim(), "");
    }
    use embedded_graphics::prelude::*;
    use embedded_graphics::primitives::{PrimitiveStyle, Rectangle};

    #[test]
    fn layout_is_precursors() {
        let mut fb = FrameBuffer::new();
        assert_eq!(fb.words().len() * 4, 0x5C20);
        assert_eq!(fb.dirty_lines().count(), 0);
        assert!(fb.set(0, 0, true) && fb.set(335, 535, true) && fb.set(33, 7, true));
        assert_eq!(fb.line(0)[0], 0xFFFF_FFFE);
        assert_eq!(fb.line(535)[10], 0x0000_7FFF | DIRTY_BIT, "pixel 335 = bit 15 of word 10");
        assert_eq!(fb.line(7)[1], 0xFFFF_FFFD, "pixel 33 = bit 1 of word 1");
        assert_eq!(fb.dirty_lines().collect::<Vec<_>>(), vec![0, 7, 535]);
        assert!(fb.set(33, 7, false));
        assert_eq!(fb.is_dark(33, 7), Some(false));
        fb.mark_clean();
        assert_eq!(fb.dirty_lines().count(), 0);
        assert_eq!(fb.line(535)[10], 0x0000_7FFF);
    }

    #[test]
    fn the_dirty_bitmap_agrees_with_the_lines_dirty_bits() {
        let from_words = |fb: &FrameBuffer| {
            (0..LINES).filter(|&y| fb.line(y)[WORDS_PER_LINE - 1] & DIRTY_BIT != 0).collect::<Vec<_>>()
        };
        let mut fb = FrameBuffer::new();
        fb.clear_screen();
        assert_eq!(fb.dirty_lines().collect::<Vec<_>>(), (0..LINES).collect::<Vec<_>>());
        assert_eq!(from_words(&fb), (0..LINES).collect::<Vec<_>>());
        fb.mark_clean();
        assert!(!fb.any_dirty() && from_words(&fb).is_empty());
        // lines at the bitmap's word edges, one cleaned alone
        for y in [0, 31, 32, 63, 500, 511, 512, 535] {
            fb.write_line(y, &[0; WORDS_PER_LINE]);
        }
        fb.set(10, 64, true);
        fb.mark_line_clean(32);
        fb.mark_line_clean(LINES + 3);
        let want = vec![0, 31, 63, 64, 500, 511, 512, 535];
        assert_eq!(fb.dirty_lines().collect::<Vec<_>>(), want);
        assert_eq!(from_words(&fb), want);
        assert!(want.iter().all(|&y| fb.is_dirty(y)) && !fb.is_dirty(32) && !fb.is_dirty(LINES));
        fb.mark_clean();
        assert!(!fb.any_dirty() && from_words(&fb).is_empty());
    }

    #[test]
    fn draws_outside_the_screen_are_clipped_and_counted() {
        let mut fb = FrameBuffer::new();
        assert!(!fb.set(-1, 0, true) && !fb.set(336, 0, true) && !fb.set(0, 536, true) && !fb.set(0, -5, true));
        assert_eq!(fb.clipped(), 4);
        // a rectangle hanging over the right edge: the inside is drawn, the rest counted
        Rectangle::new(Point::new(330, 10), Size::new(10, 2))
            .into_styled(PrimitiveStyle::with_fill(BinaryColor::On))
            .draw(&mut fb)
            .unwrap();
        assert_eq!(fb.clipped(), 4 + 8);
        assert_eq!((330..336).filter(|&x| fb.is_dark(x, 10) == Some(true)).count(), 6);
        assert_eq!(fb.is_dark(336, 10), None);
    }

    #[test]
    fn a_panel_log_rebuilds_the_screen() {
        let mut fb = FrameBuffer::new();
        for (x, y, s) in check::ROWS {
            text::draw(&mut fb, *x, *y, s);
        }
        assert!(fb.clipped() > 0, "the last row runs off the edge");
        // the log the simulator writes for the dirty lines
        let log: String = fb
            .dirty_lines()
            .map(|y| {
                format!(
                    "{} {y} {}\n",
                    1000 + y,
                    fb.line(y).iter().rev().map(|w| format!("{w:08x}")).collect::<String>()
                )
            })
            .collect();
        let (panel, sent) = check::panel_from_log(&log).unwrap();
        assert_eq!(sent, fb.dirty_lines().count());
        for (x, y, s) in &check::ROWS[..3] {
            assert_eq!(text::read(&panel, *x, *y, s.len()), *s);
        }
        assert_eq!(text::read(&panel, 300, 48, 7), "clippe ");
        for bad in ["1 2 3", "x 5 00", &format!("1 536 {}", "f".repeat(88)), &format!("1 5 {}", "g".repeat(88))] {
            assert!(check::panel_from_log(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn text_reads_back() {
        let mut fb = FrameBuffer::new();
        text::draw(&mut fb, 4, 20, "X25519 2.77 ms");
        assert_eq!(text::read(&fb, 4, 20, 14), "X25519 2.77 ms");
        assert_ne!(text::read(&fb, 4, 30, 3), "X25");
        let dirty: Vec<usize> = fb.dirty_lines().collect();
        assert!(dirty.iter().all(|y| (20..30).contains(y)) && !dirty.is_empty(), "{dirty:?}");
    }
}
