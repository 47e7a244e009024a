//! The ops on candle's CUDA device (feature `candle-cuda`).
