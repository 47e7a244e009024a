//! The PTX that build.rs compiled (or did not), and what it was built with.

mod built {
    include!(concat!(env!("OUT_DIR"), "/gradops_kernels.rs"));
}

/// How the CUDA kernels were built (for `gradops info`).
#[derive(Debug, Clone, Copy)]
pub struct BuildInfo {
    /// All kernel files were compiled to PTX and are embedded.
    pub kernels_compiled: bool,
    /// nvcc release (`13.0.88`), empty without nvcc.
    pub nvcc_version: &'static str,
    /// nvcc used.
    pub nvcc_path: &'static str,
    /// Virtual architecture of the PTX (`compute_75`).
    pub arch: &'static str,
    /// Why the kernels are missing (empty when compiled).
    pub reason: &'static str,
    /// Embedded modules: (name, PTX bytes).
    pub modules: &'static [(&'static str, Option<&'static str>)],
}

/// The build-time facts about the kernels.
pub fn build_info() -> BuildInfo {
    BuildInfo {
        kernels_compiled: built::KERNELS_COMPILED,
        nvcc_version: built::NVCC_VERSION,
        nvcc_path: built::NVCC_PATH,
        arch: built::CUDA_ARCH,
        reason: built::NOT_COMPILED_REASON,
        modules: built::PTX_MODULES,
    }
}

impl std::fmt::Display for BuildInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.kernels_compiled {
            let names: Vec<&str> = self.modules.iter().map(|m| m.0).collect();
            write!(
                f,
                "kernels compiled (nvcc {}, {}, modules {})",
                self.nvcc_version,
                self.arch,
                names.join(", ")
            )
        } else {
            write!(f, "kernels not compiled: {}", self.reason)
        }
    }
}

/// PTX source of `module`, if compiled.
pub(crate) fn module_ptx(module: &str) -> Option<&'static str> {
    built::PTX_MODULES
        .iter()
        .find(|(n, _)| *n == module)
        .and_then(|(_, p)| *p)
}
