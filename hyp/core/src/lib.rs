//! The logic of Tandem's normal-world EL2 layer (`hyp/firmware`), free of
//! hardware so that it is tested on the host: the translation tables (the
//! layer's own and each partition's stage 2), the GIC as each partition
//! sees it, the SMC filter, and the decoding of traps and of the
//! exceptions handed back to a partition. docs/hyp.md describes the layer.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod calls;
pub mod fault;
pub mod gic;
pub mod maps;
pub mod tables;
