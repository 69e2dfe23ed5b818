//! The Arrow layouts the columns are built in: bitmaps ([`Bits`]), text
//! ([`Utf8`]), 8-byte values ([`Fixed`]), booleans ([`Bool`]), lists of text
//! ([`TextList`]), and [`Column`], one of them borrowed with its Arrow type.

use transcript_core::envelope::id_text;

/// A validity (or boolean values) bitmap as Arrow lays it out: bit `i % 8` of
/// byte `i / 8`, least significant first.
#[derive(Debug, Default, Clone)]
pub struct Bits {
    /// The packed bits.
    pub bytes: Vec<u8>,
    /// How many bits.
    pub len: usize,
    /// How many of them are 0 (for a validity bitmap: the null count).
    pub unset: usize,
}

impl Bits {
    /// Adds one bit.
    pub fn push(&mut self, bit: bool) {
        if self.len % 8 == 0 {
            self.bytes.push(0);
        }
        if bit {
            if let Some(last) = self.bytes.last_mut() {
                *last |= 1 << (self.len % 8);
            }
        } else {
            self.unset += 1;
        }
        self.len += 1;
    }
}

/// A text column (Arrow `large_utf8`): `offsets` has one more entry than rows.
#[derive(Debug, Clone)]
pub struct Utf8 {
    /// `i64` offsets into `data`, little-endian, starting at 0.
    pub offsets: Vec<u8>,
    /// The UTF-8 text of every row, back to back.
    pub data: Vec<u8>,
    /// Which rows are not null.
    pub valid: Bits,
}

impl Default for Utf8 {
    fn default() -> Self {
        Utf8 { offsets: 0i64.to_le_bytes().to_vec(), data: Vec::new(), valid: Bits::default() }
    }
}

impl Utf8 {
    fn end(&mut self) {
        let at = i64::try_from(self.data.len()).unwrap_or(i64::MAX);
        self.offsets.extend_from_slice(&at.to_le_bytes());
    }

    /// Adds a row of text that is known to be UTF-8.
    pub fn push_str(&mut self, text: &str) {
        self.data.extend_from_slice(text.as_bytes());
        self.end();
        self.valid.push(true);
    }

    /// Where the next row's text starts in `data`.
    pub(super) fn row_start(&self) -> usize {
        self.offsets
            .len()
            .checked_sub(8)
            .and_then(|at| self.offsets.get(at..))
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(0, |b| usize::try_from(i64::from_le_bytes(b)).unwrap_or(0))
    }

    /// Ends a row whose text was appended to `data` directly, decoded from a
    /// `str` (so UTF-8 already; not checked again).
    pub(super) fn end_row(&mut self) {
        debug_assert!(std::str::from_utf8(&self.data[self.row_start()..]).is_ok());
        self.end();
        self.valid.push(true);
    }

    /// Adds a row from decoded JSON string bytes (WTF-8): a lone surrogate is
    /// written as its `\uXXXX` escape, so the column stays UTF-8.
    pub fn push_wtf8(&mut self, bytes: &[u8]) {
        match simdutf8::basic::from_utf8(bytes) {
            Ok(text) => self.push_str(text),
            Err(_) => self.push_str(&id_text(bytes)),
        }
    }

    /// Adds a null row.
    pub fn push_null(&mut self) {
        self.end();
        self.valid.push(false);
    }

    /// Adds `text` (WTF-8) or a null.
    pub fn push_opt(&mut self, text: Option<&[u8]>) {
        match text {
            Some(t) => self.push_wtf8(t),
            None => self.push_null(),
        }
    }

    /// The number of rows.
    pub fn len(&self) -> usize {
        self.valid.len
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.valid.len == 0
    }
}

/// A column of 8-byte values (Arrow `int64`, `timestamp[us]` or `float64`).
#[derive(Debug, Default, Clone)]
pub struct Fixed {
    /// The values, little-endian, 8 bytes a row (0 under a null).
    pub values: Vec<u8>,
    /// Which rows are not null.
    pub valid: Bits,
}

impl Fixed {
    /// Adds an integer or a null.
    pub fn push_i64(&mut self, v: Option<i64>) {
        self.values.extend_from_slice(&v.unwrap_or(0).to_le_bytes());
        self.valid.push(v.is_some());
    }

    /// Adds a float or a null.
    pub fn push_f64(&mut self, v: Option<f64>) {
        self.values.extend_from_slice(&v.unwrap_or(0.0).to_le_bytes());
        self.valid.push(v.is_some());
    }
}

/// A boolean column (Arrow `bool`): values and validity, both bitmaps.
#[derive(Debug, Default, Clone)]
pub struct Bool {
    /// The values (0 under a null).
    pub values: Bits,
    /// Which rows are not null.
    pub valid: Bits,
}

impl Bool {
    /// Adds a value or a null.
    pub fn push(&mut self, v: Option<bool>) {
        self.values.push(v.unwrap_or(false));
        self.valid.push(v.is_some());
    }
}

/// A list-of-text column (Arrow `list<large_utf8>`).
#[derive(Debug, Clone)]
pub struct TextList {
    /// `i32` offsets into `items`, little-endian, starting at 0.
    pub offsets: Vec<u8>,
    /// Which rows are not null.
    pub valid: Bits,
    /// Every row's items, back to back.
    pub items: Utf8,
}

impl Default for TextList {
    fn default() -> Self {
        TextList {
            offsets: 0i32.to_le_bytes().to_vec(),
            valid: Bits::default(),
            items: Utf8::default(),
        }
    }
}

impl TextList {
    pub(super) fn end(&mut self, valid: bool) {
        let at = i32::try_from(self.items.len()).unwrap_or(i32::MAX);
        self.offsets.extend_from_slice(&at.to_le_bytes());
        self.valid.push(valid);
    }
}

/// One column of a table, borrowed mutably (a binding moves its buffers out
/// instead of copying them), with its Arrow type.
#[derive(Debug)]
pub enum Column<'a> {
    /// `large_utf8`.
    Text(&'a mut Utf8),
    /// `int64`.
    Int(&'a mut Fixed),
    /// `timestamp[us, tz=UTC]`.
    Timestamp(&'a mut Fixed),
    /// `float64`.
    Float(&'a mut Fixed),
    /// `bool`.
    Bool(&'a mut Bool),
    /// `list<large_utf8>`.
    TextList(&'a mut TextList),
}
