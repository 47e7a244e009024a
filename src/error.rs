//! The crate's one error type. Every message names the op, the argument and the values.

/// Result alias used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in a gradops call.
///
/// Validation errors carry the op name (as in SPEC.md, e.g. `resize_grad`), the argument
/// name (`dy`, `scales`, `padding`, ...) and a description of the offending values.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tensor argument is not rank 4.
    #[error("{op}: argument `{arg}` must be rank 4, got rank {rank} (shape {shape:?})")]
    Rank {
        /// Op name.
        op: &'static str,
        /// Argument name.
        arg: &'static str,
        /// The rank received.
        rank: usize,
        /// The shape received.
        shape: Vec<usize>,
    },
    /// An argument's shape disagrees with another argument or with the computed geometry.
    #[error("{op}: argument `{arg}`: {msg}")]
    Shape {
        /// Op name.
        op: &'static str,
        /// Argument name.
        arg: &'static str,
        /// What is wrong, with the values.
        msg: String,
    },
    /// An attribute has a value the op does not accept.
    #[error("{op}: attribute `{arg}`: {msg}")]
    Attr {
        /// Op name.
        op: &'static str,
        /// Attribute name.
        arg: &'static str,
        /// What is wrong, with the values.
        msg: String,
    },
    /// A buffer's length does not match the shape it is said to hold.
    #[error(
        "{op}: argument `{arg}` holds {got} elements, but its shape {shape:?} needs {expected}"
    )]
    BufferLen {
        /// Op name.
        op: &'static str,
        /// Argument name.
        arg: &'static str,
        /// Elements the shape needs.
        expected: usize,
        /// Elements the buffer holds.
        got: usize,
        /// The shape.
        shape: Vec<usize>,
    },
    /// A size computation overflowed `usize` (or a device index type).
    #[error("{op}: argument `{arg}`: size overflows: {msg}")]
    Overflow {
        /// Op name.
        op: &'static str,
        /// Argument name.
        arg: &'static str,
        /// The sizes involved.
        msg: String,
    },
    /// Arguments have element types that do not go together.
    #[error("{op}: argument `{arg}` has dtype {got}, expected {expected}")]
    Dtype {
        /// Op name.
        op: &'static str,
        /// Argument name.
        arg: &'static str,
        /// Expected dtype.
        expected: String,
        /// Received dtype.
        got: String,
    },
    /// CUDA cannot be used on this machine or build; `reason` says why.
    #[error("CUDA unavailable: {reason}")]
    CudaUnavailable {
        /// Why (no libcuda, no device, kernels not compiled in, ...).
        reason: String,
    },
    /// A device argument cannot be used with the stream it was passed with (it lives in
    /// another CUDA context).
    #[error("{op}: argument `{arg}`: {msg}")]
    Device {
        /// Op name.
        op: &'static str,
        /// Argument name.
        arg: &'static str,
        /// What is wrong, with the values.
        msg: String,
    },
    /// A CUDA driver call or kernel launch failed.
    #[error("{op}: CUDA error: {msg}")]
    Cuda {
        /// Op (or runtime step) that failed.
        op: &'static str,
        /// The driver's message.
        msg: String,
    },
    /// A `gradops run` case file is malformed (missing key, unknown op, bad JSON).
    #[error("case {path}: {msg}")]
    Case {
        /// Case file path.
        path: String,
        /// What is wrong.
        msg: String,
    },
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// An [`Error::Shape`] for `op`'s argument `arg`.
    pub fn shape(op: &'static str, arg: &'static str, msg: impl Into<String>) -> Self {
        Error::Shape {
            op,
            arg,
            msg: msg.into(),
        }
    }

    /// An [`Error::Attr`] for `op`'s argument `arg`.
    pub fn attr(op: &'static str, arg: &'static str, msg: impl Into<String>) -> Self {
        Error::Attr {
            op,
            arg,
            msg: msg.into(),
        }
    }
}
