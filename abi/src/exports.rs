//! Every constant the C header and the Python module get, gathered from the
//! modules that define them (the crate's root only declares: its modules
//! import it, never the other way round).

use crate::{CConstant, MAX_CORES, image, layout, partition, rpc, rpmsg, shm, smc, workload};

const C_CONSTANTS: &[CConstant] = &[CConstant {
    name: "MAX_CORES",
    value: MAX_CORES as i64,
}];

/// Every constant the C and Python sides need, in header order.
pub fn c_constants() -> impl Iterator<Item = CConstant> {
    C_CONSTANTS
        .iter()
        .chain(smc::C_CONSTANTS.iter())
        .chain(layout::C_CONSTANTS.iter())
        .chain(shm::C_CONSTANTS.iter())
        .chain(rpc::C_CONSTANTS.iter())
        .chain(rpmsg::C_CONSTANTS.iter())
        .chain(workload::C_CONSTANTS.iter())
        .chain(image::C_CONSTANTS.iter())
        .chain(partition::C_CONSTANTS.iter())
        .copied()
}
