//! C ABI placeholder (filled below).
