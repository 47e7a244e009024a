//! The PTX images that build.rs compiled (or did not), and what they were built with.

mod built {
    include!(concat!(env!("OUT_DIR"), "/gradops_kernels.rs"));
}

/// One embedded PTX image: one kernel file (module) compiled for one virtual architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PtxImage {
    /// Module (kernel file stem): `resize`, `conv` or `pool`.
    pub module: &'static str,
    /// Virtual architecture: `80` for `compute_80` (`__CUDA_ARCH__` was `800`).
    pub arch: u32,
    /// The architecture-specific feature suffix: `""`, or `"a"` for a compute_90a image
    /// (Hopper's `wgmma`; loadable on compute capability 9.0 only).
    pub feature: &'static str,
    /// The PTX text.
    pub ptx: &'static str,
}

impl std::fmt::Display for PtxImage {
    /// `conv.compute_80`, `conv.compute_90a`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.compute_{}{}", self.module, self.arch, self.feature)
    }
}

/// How the CUDA kernels were built (for `gradops info`).
#[derive(Debug, Clone, Copy)]
pub struct BuildInfo {
    /// Every kernel file was compiled to PTX for every architecture, and all are embedded.
    pub kernels_compiled: bool,
    /// nvcc release (`13.0.88`), empty without nvcc.
    pub nvcc_version: &'static str,
    /// nvcc used.
    pub nvcc_path: &'static str,
    /// Virtual architectures of the PTX images as text (`compute_75,compute_80,compute_90`).
    pub arch: &'static str,
    /// Virtual architectures of the PTX images, ascending (`[75, 80, 90]`); what
    /// `GRADOPS_CUDA_ARCH` asked for, even when nothing was compiled.
    pub archs: &'static [u32],
    /// Why the kernels are missing (empty when compiled).
    pub reason: &'static str,
    /// Kernel modules (file stems): `resize`, `conv`, `pool`.
    pub modules: &'static [&'static str],
    /// Extra nvcc flags the kernels were built with (`GRADOPS_NVCC_FLAGS`, such as a
    /// build-time alternative's `-DGO_TC_WGMMA_INFLIGHT=0`); empty for the default build.
    pub nvcc_flags: &'static str,
}

impl BuildInfo {
    /// Every embedded portable image, by module then architecture (none when not compiled).
    pub fn images(&self) -> impl Iterator<Item = PtxImage> {
        built::PTX_IMAGES
            .iter()
            .map(|&(module, arch, ptx)| PtxImage {
                module,
                arch,
                feature: "",
                ptx,
            })
    }

    /// The compute_90a images (built where compute_90 is): kernels that use Hopper's
    /// architecture-specific instructions, loadable on compute capability 9.0 only.
    pub fn sm90a_images(&self) -> impl Iterator<Item = PtxImage> {
        built::PTX_IMAGES_SM90A
            .iter()
            .map(|&(module, ptx)| PtxImage {
                module,
                arch: 90,
                feature: "a",
                ptx,
            })
    }
}

/// The build-time facts about the kernels.
pub fn build_info() -> BuildInfo {
    BuildInfo {
        kernels_compiled: built::KERNELS_COMPILED,
        nvcc_version: built::NVCC_VERSION,
        nvcc_path: built::NVCC_PATH,
        arch: built::CUDA_ARCH,
        archs: built::CUDA_ARCHS,
        reason: built::NOT_COMPILED_REASON,
        modules: built::PTX_MODULES,
        nvcc_flags: built::NVCC_FLAGS,
    }
}

impl std::fmt::Display for BuildInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.kernels_compiled {
            let archs: Vec<String> = self.archs.iter().map(|a| format!("compute_{a}")).collect();
            write!(
                f,
                "kernels compiled (nvcc {}; modules {}; PTX images for {} each)",
                self.nvcc_version,
                self.modules.join(", "),
                archs.join(", ")
            )?;
            if !self.nvcc_flags.is_empty() {
                write!(f, " with GRADOPS_NVCC_FLAGS={}", self.nvcc_flags)?;
            }
            Ok(())
        } else {
            write!(f, "kernels not compiled: {}", self.reason)
        }
    }
}

/// The image of `module` for virtual architecture `arch`, if compiled.
pub(crate) fn image(module: &str, arch: u32) -> Option<PtxImage> {
    build_info()
        .images()
        .find(|i| i.module == module && i.arch == arch)
}

/// The compute_90a image of `module`, if compiled.
pub(crate) fn sm90a_image(module: &str) -> Option<PtxImage> {
    build_info().sm90a_images().find(|i| i.module == module)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `gradops info` names a build-time alternative's flags, and only for such a build.
    #[test]
    fn build_info_names_extra_nvcc_flags() {
        let b = BuildInfo {
            kernels_compiled: true,
            nvcc_flags: "",
            ..build_info()
        };
        assert!(!b.to_string().contains("GRADOPS_NVCC_FLAGS"), "{b}");
        let v = BuildInfo {
            nvcc_flags: "-DGO_TC_WGMMA_INFLIGHT=0",
            ..b
        };
        assert!(
            v.to_string()
                .ends_with(") with GRADOPS_NVCC_FLAGS=-DGO_TC_WGMMA_INFLIGHT=0"),
            "{v}"
        );
    }
}
