//! A minimal echo server used by the IPC round-trip benchmarks (`ipc-bench`).

/// Name registered with xous-names.
pub const SERVER_NAME: &str = "_hosted-tests echo_";

/// Opcodes understood by `echo-server`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Opcode {
    /// Blocking scalar: returns arg1 + 1.
    ScalarPlusOne = 1,
    /// Mutable lend: the server adds 1 (wrapping) to every byte of the buffer.
    LendIncrement = 2,
    /// Stop serving (sent by the benchmark client when done).
    Quit = 3,
}

impl Opcode {
    pub fn from_usize(v: usize) -> Option<Self> {
        match v {
            1 => Some(Self::ScalarPlusOne),
            2 => Some(Self::LendIncrement),
            3 => Some(Self::Quit),
            _ => None,
        }
    }
}
