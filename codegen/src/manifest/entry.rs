//! One `operations` entry read into typed families, every bad or missing value reported.

use super::naming::Template;
use super::report::Report;
use super::schema::RawOperation;
use super::values::{describe, family, integer, shape_family, spelled_family, stages, BadValue, Stages};
use crate::model::{
    Activation, AuxInput, AuxOutput, BatchMode, Broadcast, ConvLayout, DType, Epilogue, EpilogueSchedule,
    GroupSchedule, IteratorAlgorithm, KernelSchedule, Layout, MathOp, OpClass, OperationKind, Reduction,
    Residual, Shape3, SplitK, StrideSupport, Swizzle, TileScheduler,
};
use serde_yaml::Value;

/// An entry whose every field is a non-empty list of values; `None` means "not given, use the
/// default" (defaults depend on other fields, so they are filled per kernel in `expand.rs`).
/// Which fields an arch takes (`warps` only on 80, `cluster` only on 90, ...) is checked afterwards,
/// in `arch_keys.rs`.
pub struct Entry {
    /// False if any field of the entry had a problem (then a bad optional field was left to its
    /// default, so that the rest of the entry can still be checked).
    pub clean: bool,
    /// What the entry's kernels compute (`kind`).
    pub kind: OperationKind,
    /// The cargo feature the entry's kernels are built under (`None`: always built).
    pub feature: Option<String>,
    pub name: Option<Template>,
    pub arch: Vec<u32>,
    pub opclass: Option<Vec<OpClass>>,
    pub a: Vec<DType>,
    pub b: Option<Vec<DType>>,
    pub c: Option<Vec<DType>>,
    pub accumulator: Option<Vec<DType>>,
    pub epilogue_compute: Option<Vec<DType>>,
    pub layout_a: Vec<Layout>,
    pub layout_b: Vec<Layout>,
    pub layout_c: Option<Vec<Layout>>,
    pub alignment: Option<Vec<u32>>,
    pub alignment_c: Option<Vec<u32>>,
    pub tile: Vec<Shape3>,
    pub cluster: Option<Vec<Shape3>>,
    pub warps: Option<Vec<Shape3>>,
    pub instruction: Option<Vec<Shape3>>,
    pub stages: Option<Vec<Stages>>,
    pub schedule: Option<Vec<KernelSchedule>>,
    pub epilogue_schedule: Option<Vec<EpilogueSchedule>>,
    pub tile_scheduler: Option<Vec<TileScheduler>>,
    pub math: Option<Vec<MathOp>>,
    pub swizzle: Option<Vec<Swizzle>>,
    pub split_k: Option<Vec<SplitK>>,
    pub epilogue: Option<Vec<Epilogue>>,
    pub activation: Option<Vec<Activation>>,
    pub bias: Option<Vec<Broadcast>>,
    pub scale: Option<Vec<Broadcast>>,
    pub aux_output: Option<Vec<AuxOutput>>,
    pub residual: Option<Vec<Residual>>,
    pub aux_input: Option<Vec<AuxInput>>,
    pub reduction: Option<Vec<Reduction>>,
    pub group_schedule: Option<Vec<GroupSchedule>>,
    pub batch_mode: Option<Vec<BatchMode>>,
    pub iterator_algorithm: Option<Vec<IteratorAlgorithm>>,
    pub stride_support: Option<Vec<StrideSupport>>,
    pub tensor_layout: Option<Vec<ConvLayout>>,
}

/// Reads entry `index`, reporting every problem; `None` when a required field is missing or
/// unreadable, so that no kernel can be built from it. (`warps`, required for arch 80 only, is
/// checked by `arch_keys.rs`.)
pub fn read(raw: &RawOperation, index: usize, report: &mut Report) -> Option<Entry> {
    let mut r = Reader {
        report,
        index,
        clean: true,
    };
    let kind = r.kind(&raw.kind);
    let feature = r.feature(&raw.feature);
    let name = r.name(&raw.name);
    let dtype = |v: &Value| spelled_family(v, DType::from_manifest_name, &DType::allowed());
    let layout = |v: &Value| spelled_family(v, Layout::from_manifest_name, &Layout::allowed());
    let integers = |v: &Value| family(v, integer);
    let dtype_help = format!("the element type of A, one of {}", DType::allowed());
    let layout_help = format!("one of {}", Layout::allowed());
    let tile_help = "the threadblock tile [M, N, K], e.g. [128, 128, 32]";
    let mut entry = Entry {
        clean: true,
        kind,
        feature,
        name,
        arch: r.required(
            "arch",
            &raw.arch,
            integers,
            "the compute capability; allowed: 80 (CUTLASS 2.x), 90 (CUTLASS 3.x, sm_90a)",
        ),
        opclass: r.optional("opclass", &raw.opclass, |v| {
            spelled_family(v, OpClass::from_manifest_name, &OpClass::allowed())
        }),
        a: r.required("a", &raw.a, dtype, &dtype_help),
        b: r.optional("b", &raw.b, dtype),
        c: r.optional("c", &raw.c, dtype),
        accumulator: r.optional("accumulator", &raw.accumulator, dtype),
        epilogue_compute: r.optional("epilogue_compute", &raw.epilogue_compute, dtype),
        layout_a: r.matrix_layout(kind, "layout_a", &raw.layout_a, layout, &layout_help),
        layout_b: r.matrix_layout(kind, "layout_b", &raw.layout_b, layout, &layout_help),
        layout_c: if kind.conv_kind().is_some() {
            r.no_matrix_layout("layout_c", &raw.layout_c);
            None
        } else {
            r.optional("layout_c", &raw.layout_c, layout)
        },
        alignment: r.optional("alignment", &raw.alignment, integers),
        alignment_c: r.optional("alignment_c", &raw.alignment_c, integers),
        tile: r.required("tile", &raw.tile, shape_family, tile_help),
        cluster: r.optional("cluster", &raw.cluster, shape_family),
        warps: r.optional("warps", &raw.warps, shape_family),
        instruction: r.optional("instruction", &raw.instruction, shape_family),
        stages: r.optional("stages", &raw.stages, |v| family(v, stages)),
        schedule: r.optional("schedule", &raw.schedule, |v| {
            spelled_family(v, KernelSchedule::from_manifest_name, &KernelSchedule::allowed())
        }),
        epilogue_schedule: r.optional("epilogue_schedule", &raw.epilogue_schedule, |v| {
            spelled_family(
                v,
                EpilogueSchedule::from_manifest_name,
                &EpilogueSchedule::allowed(),
            )
        }),
        tile_scheduler: r.optional("tile_scheduler", &raw.tile_scheduler, |v| {
            spelled_family(v, TileScheduler::from_manifest_name, &TileScheduler::allowed())
        }),
        math: r.optional("math", &raw.math, |v| {
            spelled_family(v, MathOp::from_manifest_name, &MathOp::allowed())
        }),
        swizzle: r.optional("swizzle", &raw.swizzle, |v| {
            spelled_family(v, Swizzle::from_manifest_name, &Swizzle::allowed())
        }),
        split_k: r.optional("split_k", &raw.split_k, |v| {
            spelled_family(v, SplitK::from_manifest_name, "serial, parallel")
        }),
        epilogue: r.optional("epilogue", &raw.epilogue, |v| {
            spelled_family(v, Epilogue::from_manifest_name, &Epilogue::allowed())
        }),
        activation: r.optional("activation", &raw.activation, |v| {
            spelled_family(v, Activation::from_manifest_name, &Activation::allowed())
        }),
        bias: r.optional("bias", &raw.bias, |v| {
            spelled_family(v, Broadcast::from_manifest_name, &Broadcast::allowed())
        }),
        scale: r.optional("scale", &raw.scale, |v| {
            spelled_family(v, Broadcast::from_manifest_name, &Broadcast::allowed())
        }),
        aux_output: r.optional("aux_output", &raw.aux_output, |v| {
            spelled_family(v, AuxOutput::from_manifest_name, &AuxOutput::allowed())
        }),
        residual: r.optional("residual", &raw.residual, |v| {
            spelled_family(v, Residual::from_manifest_name, &Residual::allowed())
        }),
        aux_input: r.optional("aux_input", &raw.aux_input, |v| {
            spelled_family(v, AuxInput::from_manifest_name, &AuxInput::allowed())
        }),
        reduction: r.optional("reduction", &raw.reduction, |v| {
            spelled_family(v, Reduction::from_manifest_name, &Reduction::allowed())
        }),
        group_schedule: r.optional("group_schedule", &raw.group_schedule, |v| {
            spelled_family(v, GroupSchedule::from_manifest_name, &GroupSchedule::allowed())
        }),
        batch_mode: r.optional("batch_mode", &raw.batch_mode, |v| {
            spelled_family(v, BatchMode::from_manifest_name, &BatchMode::allowed())
        }),
        iterator_algorithm: r.optional("iterator_algorithm", &raw.iterator_algorithm, |v| {
            spelled_family(
                v,
                IteratorAlgorithm::from_manifest_name,
                &IteratorAlgorithm::allowed(),
            )
        }),
        stride_support: r.optional("stride_support", &raw.stride_support, |v| {
            spelled_family(v, StrideSupport::from_manifest_name, &StrideSupport::allowed())
        }),
        tensor_layout: r.optional("tensor_layout", &raw.tensor_layout, |v| {
            spelled_family(v, ConvLayout::from_manifest_name, &ConvLayout::allowed())
        }),
    };
    entry.clean = r.clean;
    let required = [
        entry.arch.len(),
        entry.a.len(),
        entry.layout_a.len(),
        entry.layout_b.len(),
    ];
    let complete = !required.contains(&0) && !entry.tile.is_empty();
    complete.then_some(entry)
}

struct Reader<'r, 't> {
    report: &'r mut Report<'t>,
    index: usize,
    /// Cleared by the first problem.
    clean: bool,
}

impl Reader<'_, '_> {
    fn problem(&mut self, key: &str, list_index: Option<usize>, message: String) {
        self.clean = false;
        self.report.at(self.index, Some(key), list_index, message);
    }

    fn optional<T>(
        &mut self,
        key: &str,
        value: &Option<Value>,
        read: impl Fn(&Value) -> Result<Vec<T>, Vec<BadValue>>,
    ) -> Option<Vec<T>> {
        match read(value.as_ref()?) {
            Ok(values) => Some(values),
            Err(bad) => {
                for BadValue { index, message } in bad {
                    self.problem(key, index, message);
                }
                None
            }
        }
    }

    fn required<T>(
        &mut self,
        key: &str,
        value: &Option<Value>,
        read: impl Fn(&Value) -> Result<Vec<T>, Vec<BadValue>>,
        what: &str,
    ) -> Vec<T> {
        if value.is_none() {
            self.problem(key, None, format!("missing; `{key}` is required: {what}"));
        }
        self.optional(key, value, read).unwrap_or_default()
    }

    /// `layout_a` / `layout_b`: required for GEMM kinds; a conv entry has none (its tensors are
    /// channels-last) and gets a placeholder that `expand.rs` replaces by the implicit GEMM's view.
    fn matrix_layout(
        &mut self,
        kind: OperationKind,
        key: &str,
        value: &Option<Value>,
        read: impl Fn(&Value) -> Result<Vec<Layout>, Vec<BadValue>>,
        what: &str,
    ) -> Vec<Layout> {
        if kind.conv_kind().is_some() {
            self.no_matrix_layout(key, value);
            return vec![Layout::Row];
        }
        self.required(key, value, read, what)
    }

    /// Reports a matrix layout given to a conv entry.
    fn no_matrix_layout(&mut self, key: &str, value: &Option<Value>) {
        if value.is_none() {
            return;
        }
        self.problem(
            key,
            None,
            format!(
                "conv entries take no matrix layouts: their tensors are channels-last (activation NHWC, filter \
                 KRSC, output NPQK) or, with `tensor_layout: nc32hw32`, CUTLASS's interleaved int8 layouts; \
                 remove `{key}`"
            ),
        );
    }

    /// The entry's operation; a missing or unknown one is reported and read as `gemm`, so that
    /// the rest of the entry is still checked.
    fn kind(&mut self, value: &Option<Value>) -> OperationKind {
        let allowed = format!("allowed: {} (one kind per entry)", OperationKind::allowed());
        match value {
            None => self.problem("kind", None, format!("missing; `kind` is required, {allowed}")),
            Some(Value::String(s)) => match OperationKind::from_manifest_name(s) {
                Some(kind) => return kind,
                None => self.problem(
                    "kind",
                    None,
                    format!(
                        "{} is not supported; {allowed}",
                        describe(value.as_ref().unwrap())
                    ),
                ),
            },
            Some(v) => self.problem(
                "kind",
                None,
                format!("{} is not supported; {allowed}", describe(v)),
            ),
        }
        OperationKind::Gemm
    }

    /// The cargo feature the entry is built under: a feature name of the crate whose manifest
    /// this is (letters, digits, `-` and `_`).
    fn feature(&mut self, value: &Option<Value>) -> Option<String> {
        let valid = |s: &str| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        match value.as_ref()? {
            Value::String(s) if valid(s) => Some(s.clone()),
            v => {
                self.problem(
                    "feature",
                    None,
                    format!(
                        "{} is not a cargo feature name; give one feature of this crate (letters, digits, \
                         `-` and `_`), e.g. `feature: grouped`; the entry is then built only with that feature",
                        describe(v)
                    ),
                );
                None
            }
        }
    }

    fn name(&mut self, value: &Option<Value>) -> Option<Template> {
        match value.as_ref()? {
            Value::String(s) => match Template::parse(s) {
                Ok(template) => Some(template),
                Err(messages) => {
                    messages.into_iter().for_each(|m| self.problem("name", None, m));
                    None
                }
            },
            v => {
                let message = format!(
                    "{} is not a string; `name` is one template for every kernel of the entry, \
                     with placeholders such as {{layout}} or {{tile}} to tell a family's kernels apart",
                    describe(v)
                );
                self.problem("name", None, message);
                None
            }
        }
    }
}
