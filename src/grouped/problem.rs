//! A grouped GEMM problem as discovery sees it, and the rules a grouped kernel checks it by.
//!
//! A group list may be long (hundreds of experts): a rule broken by many groups is reported once,
//! with the first group that breaks it and how many do, so that a refusal stays a few lines.

use crate::kernel::{KernelInfo, Problem, Want};
use crate::model::{DType, GroupSchedule, Layout, OperationKind, TensorAttributes};

/// One group's extents and, when known, its leading dimensions and operand addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupShape {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Leading dimensions of A, B and C/D, in elements, when known.
    pub ld: Option<[usize; 3]>,
    /// Byte addresses of A, B, C and D (only their alignment matters), when known.
    pub addresses: Option<[u64; 4]>,
}

impl GroupShape {
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        GroupShape {
            m,
            n,
            k,
            ld: None,
            addresses: None,
        }
    }

    /// Whether the group has no output (m or n is 0): it costs nothing and reads nothing.
    pub fn is_empty(&self) -> bool {
        self.m == 0 || self.n == 0
    }
}

/// A grouped GEMM problem: D_g (m_g×n_g) = alpha·A_g·B_g + beta·C_g for every group g, with one
/// set of operand types and layouts.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupedProblem {
    pub element_a: DType,
    pub element_b: DType,
    pub element_c: DType,
    pub layout_a: Layout,
    pub layout_b: Layout,
    pub layout_c: Layout,
    pub group_count: usize,
    /// Every group's extents, when they are known on the host (`None`: they live on the device, as
    /// in [`super::MoeGemm`]; the kernel then schedules on the device).
    pub groups: Option<Vec<GroupShape>>,
    /// Compute capability of the device that will run it (`major * 10 + minor`), when known.
    pub compute_capability: Option<u32>,
}

impl GroupedProblem {
    /// A problem of the given types and layouts over `groups` (extents known on the host).
    pub fn new(
        (element_a, element_b, element_c): (DType, DType, DType),
        (layout_a, layout_b, layout_c): (Layout, Layout, Layout),
        groups: Vec<GroupShape>,
    ) -> Self {
        GroupedProblem {
            element_a,
            element_b,
            element_c,
            layout_a,
            layout_b,
            layout_c,
            group_count: groups.len(),
            groups: Some(groups),
            compute_capability: None,
        }
    }

    /// A problem of `group_count` groups whose extents live only on the device.
    pub fn device_resident(
        types: (DType, DType, DType),
        layouts: (Layout, Layout, Layout),
        group_count: usize,
    ) -> Self {
        GroupedProblem {
            groups: None,
            group_count,
            ..GroupedProblem::new(types, layouts, Vec::new())
        }
    }

    pub fn on_compute_capability(mut self, cc: u32) -> Self {
        self.compute_capability = Some(cc);
        self
    }
}

/// The most groups one launch takes: CUTLASS counts them in `int`.
pub const MAX_GROUPS: usize = i32::MAX as usize;

/// Collects how many groups break one rule and the first one that does.
struct Tally {
    first: Option<usize>,
    count: usize,
}

impl Tally {
    fn new() -> Self {
        Tally {
            first: None,
            count: 0,
        }
    }

    fn note(&mut self, group: usize, ok: bool) {
        if !ok {
            self.first.get_or_insert(group);
            self.count += 1;
        }
    }

    /// "group 3" or "group 3 (and 5 more)".
    fn groups(&self) -> String {
        let first = self.first.unwrap_or(0);
        match self.count {
            0 | 1 => format!("group {first}"),
            n => format!("group {first} (and {} more)", n - 1),
        }
    }
}

impl Problem for GroupedProblem {
    fn operation(&self) -> OperationKind {
        OperationKind::GemmGrouped
    }

    fn compute_capability(&self) -> Option<u32> {
        self.compute_capability
    }

    fn rules(&self, kernel: &KernelInfo, want: &mut impl Want) {
        crate::gemm::operand_rules(
            kernel.gemm(),
            [self.element_a, self.element_b, self.element_c],
            [self.layout_a, self.layout_b, self.layout_c],
            want,
        );
        want((1..=MAX_GROUPS).contains(&self.group_count), &|| {
            format!(
                "{} groups: a grouped launch takes 1 to {MAX_GROUPS}",
                self.group_count
            )
        });
        let host_schedule = matches!(
            kernel.operation,
            crate::model::Operation::GemmGrouped(g) if g.schedule == GroupSchedule::Host
        );
        match &self.groups {
            Some(groups) => group_rules(kernel, groups, want),
            None => want(!host_schedule, &|| {
                "this kernel precomputes its schedule on the host, which needs every group's extents \
                 there; use a kernel with `group_schedule: device` for extents that live on the device"
                    .to_string()
            }),
        }
    }
}

/// The contiguous extent of an operand (what 128-bit accesses read along) and its name.
fn contiguous(layout: Layout, rows: usize, cols: usize) -> (usize, &'static str) {
    match layout {
        Layout::Column | Layout::ColumnInterleaved32 => (rows, "rows"),
        Layout::Row | Layout::RowInterleaved32 => (cols, "columns"),
    }
}

/// Per-group rules: extents in range, alignment of every group's contiguous extents, leading
/// dimensions and addresses. Groups without output or without products (k = 0: D = β·C, computed
/// beside the kernel) are not the kernel's.
fn group_rules(kernel: &KernelInfo, groups: &[GroupShape], want: &mut impl Want) {
    let op = kernel.gemm();
    let mut too_large = Tally::new();
    let operands: [(&str, TensorAttributes); 3] = [("A", op.a), ("B", op.b), ("C/D", op.c)];
    let mut extent = [Tally::new(), Tally::new(), Tally::new()];
    let mut ld = [Tally::new(), Tally::new(), Tally::new()];
    let mut address = [Tally::new(), Tally::new(), Tally::new(), Tally::new()];
    let mut example_extent = [(0usize, ""); 3];
    let mut example_ld = [0usize; 3];
    let mut example_address = [0u64; 4];
    for (g, group) in groups.iter().enumerate() {
        let limit = i32::MAX as usize;
        too_large.note(g, group.m <= limit && group.n <= limit && group.k <= limit);
        if group.is_empty() || group.k == 0 {
            continue;
        }
        let dims = [(group.m, group.k), (group.k, group.n), (group.m, group.n)];
        for (i, &(_, attributes)) in operands.iter().enumerate() {
            let align = attributes.alignment as usize;
            let (rows, cols) = dims[i];
            let (e, what) = contiguous(attributes.layout, rows, cols);
            if e % align != 0 && extent[i].first.is_none() {
                example_extent[i] = (e, what);
            }
            extent[i].note(g, e % align == 0);
            if let Some(lds) = group.ld {
                if lds[i] % align != 0 && ld[i].first.is_none() {
                    example_ld[i] = lds[i];
                }
                ld[i].note(g, lds[i] % align == 0);
            }
        }
        if let Some(addresses) = group.addresses {
            for (j, &a) in addresses.iter().enumerate() {
                let attributes = operands[j.min(2)].1;
                let bytes = (attributes.alignment * attributes.element.bits() / 8) as u64;
                if a % bytes != 0 && address[j].first.is_none() {
                    example_address[j] = a;
                }
                address[j].note(g, a % bytes == 0);
            }
        }
    }
    want(too_large.count == 0, &|| {
        format!(
            "{}: an extent exceeds {} (CUTLASS counts in int)",
            too_large.groups(),
            i32::MAX
        )
    });
    for (i, &(name, attributes)) in operands.iter().enumerate() {
        let align = attributes.alignment;
        want(extent[i].count == 0, &|| {
            let (e, what) = example_extent[i];
            format!(
                "{}: {name} has {e} {what} (its contiguous extent), not a multiple of the kernel's \
                 alignment {align}",
                extent[i].groups()
            )
        });
        want(ld[i].count == 0, &|| {
            format!(
                "{}: the leading dimension of {name} ({}) is not a multiple of the alignment {align}",
                ld[i].groups(),
                example_ld[i]
            )
        });
    }
    for (j, name) in ["A", "B", "C", "D"].iter().enumerate() {
        let attributes = operands[j.min(2)].1;
        let bytes = attributes.alignment * attributes.element.bits() / 8;
        want(address[j].count == 0, &|| {
            format!(
                "{}: {name} starts at address {:#x}, which is not {bytes}-byte aligned as the kernel requires",
                address[j].groups(),
                example_address[j]
            )
        });
    }
}
