//! CPU tests of grouped GEMM (`--features grouped`): the kernel model of grouped kernels, discovery
//! and `supports()` reasons, the plan's checks of every group, the argument block, and host Params
//! of every grouped kernel (2.x: persistent grid from the occupancy, host-schedule workspace; 3.x:
//! grid and workspace). `tests/gpu.rs` runs them on a GPU.
#![cfg(feature = "grouped")]

mod common;

use common::{assert_contains, invalid_message, kernel, operand, H100};
use cutlass_aot::grouped::{plan, BlockLayout, GroupOperands, GroupedOperands};
use cutlass_aot::model::{
    Api, DType, GroupSchedule, KernelSchedule, Layout, Operation, OperationKind, TileScheduler,
};
use cutlass_aot::{abi, kernels, GemmProblem, GroupShape, GroupedProblem, KernelInfo, MatrixShape};

const ADDR: u64 = 0x7f00_0000_0000;

fn grouped_kernels() -> impl Iterator<Item = &'static KernelInfo> {
    kernels::REGISTRY
        .all()
        .iter()
        .copied()
        .filter(|k| k.operation.kind() == OperationKind::GemmGrouped)
}

fn problem_of(info: &KernelInfo, groups: &[(usize, usize, usize)]) -> GroupedProblem {
    let op = info.gemm();
    GroupedProblem::new(
        (op.a.element, op.b.element, op.c.element),
        (op.a.layout, op.b.layout, op.c.layout),
        groups.iter().map(|&(m, n, k)| GroupShape::new(m, n, k)).collect(),
    )
}

/// Packed operands of every group, each at its own fake address (1 MiB apart).
fn group_operands(info: &KernelInfo, groups: &[(usize, usize, usize)]) -> Vec<GroupOperands> {
    let op = info.gemm();
    groups
        .iter()
        .enumerate()
        .map(|(g, &(m, n, k))| {
            let at = |i: u64| ADDR + ((g as u64 * 4 + i) << 20);
            GroupOperands {
                a: operand(MatrixShape::packed(m, k, op.a.layout), op.a.layout, at(0)),
                b: operand(MatrixShape::packed(k, n, op.b.layout), op.b.layout, at(1)),
                c: None,
                d: operand(MatrixShape::packed(m, n, op.c.layout), op.c.layout, at(3)),
            }
        })
        .collect()
}

fn ops(groups: &[GroupOperands]) -> GroupedOperands<'_> {
    GroupedOperands {
        groups,
        alpha: 1.0,
        beta: 0.0,
        activation_arg: 0.0,
        tuning: Default::default(),
    }
}

const RAGGED: &[(usize, usize, usize)] = &[(1000, 512, 256), (0, 512, 256), (64, 4096, 512), (8, 64, 64)];

#[test]
fn grouped_kernels_are_listed_with_their_operation_and_design() {
    let all: Vec<_> = grouped_kernels().collect();
    assert!(all.len() >= 12, "{} grouped kernels", all.len());
    for k in &all {
        let Operation::GemmGrouped(grouped) = k.operation else {
            unreachable!()
        };
        assert!(k.name.contains("gemm_grouped"), "{}", k.name);
        match k.api() {
            Api::Cutlass2x => {
                let d = k.design.as_2x().unwrap();
                assert_eq!(d.split_k, cutlass_aot::model::SplitK::None, "{}", k.name);
                assert_eq!(
                    k.name.ends_with("_host_schedule"),
                    grouped.schedule == GroupSchedule::Host,
                    "{}",
                    k.name
                );
            }
            Api::Cutlass3x => {
                let d = k.design.as_3x().unwrap();
                assert!(
                    matches!(d.schedule, KernelSchedule::Cooperative | KernelSchedule::Pingpong),
                    "{}",
                    k.name
                );
                assert_eq!(d.tile_scheduler, TileScheduler::Persistent);
                assert_eq!(grouped.schedule, GroupSchedule::Device);
            }
        }
        assert!(k.has_device_code(), "{} has no device code", k.name);
    }
    // Both scheduling modes of the same kernel.
    assert_eq!(
        kernel("grouped_f16_tn_host").operation,
        Operation::GemmGrouped(cutlass_aot::model::GroupedGemmOperation {
            gemm: *kernel("grouped_f16_tn_device").gemm(),
            schedule: GroupSchedule::Host,
        })
    );
}

#[test]
fn discovery_keeps_operations_apart() {
    let info = kernel("grouped_bf16_tn_device");
    let p = problem_of(info, RAGGED).on_compute_capability(80);
    let found: Vec<_> = kernels::REGISTRY
        .get_kernels(&p, |_| true)
        .map(|k| k.rust_name)
        .collect();
    assert!(found.contains(&"grouped_bf16_tn_device"), "{found:?}");
    assert!(found.contains(&"grouped_bf16_tn_host"), "{found:?}");
    // Only grouped kernels of these types; no GEMM kernel, no 3.x kernel on an A100.
    for name in &found {
        let k = kernel(name);
        assert_eq!(k.operation.kind(), OperationKind::GemmGrouped, "{name}");
        assert_eq!(k.gemm().a.element, DType::Bf16, "{name}");
        assert_eq!(k.api(), Api::Cutlass2x, "{name}");
    }
    // A GEMM problem is refused by a grouped kernel with one reason, not the GEMM rules.
    let gemm = GemmProblem::new(
        (128, 128, 128),
        (DType::Bf16, DType::Bf16, DType::Bf16),
        (Layout::Row, Layout::Column, Layout::Row),
    );
    let why = info.supports(&gemm).unwrap_err().reasons;
    assert_eq!(why, ["this is a gemm_grouped kernel but the problem is a gemm"]);
    // And a grouped problem by a GEMM kernel.
    let why = kernel("gemm_bf16_tn").supports(&p).unwrap_err().reasons;
    assert_eq!(why, ["this is a gemm kernel but the problem is a gemm_grouped"]);
}

#[test]
fn supports_summarises_groups_that_break_a_rule() {
    let info = kernel("grouped_f16_tn_device");
    // Alignment 8: groups 1, 2 and 3 have K = 100, 12 and 6 (A's contiguous extent).
    let p = problem_of(info, &[(64, 64, 64), (64, 64, 100), (64, 64, 12), (8, 8, 6)]);
    let why = info.supports(&p).unwrap_err().reasons.join("\n");
    assert_contains(&why, "group 1 (and 2 more): A has 100 columns (its contiguous extent), not a multiple of the kernel's alignment 8");
    // B is column-major: K rows.
    assert_contains(&why, "group 1 (and 2 more): B has 100 rows");
    assert_eq!(why.lines().count(), 2, "{why}");
    // k = 0 with output (D = beta·C beside the kernel), and empty groups that may have anything.
    let p = problem_of(info, &[(64, 64, 0), (0, 64, 3), (64, 0, 5), (64, 64, 64)]);
    assert!(info.supports(&p).is_ok(), "{:?}", info.supports(&p));
    // No groups.
    let p = problem_of(info, &[]);
    assert_contains(&info.supports(&p).unwrap_err().reasons.join("\n"), "0 groups");
    // Types and layouts.
    let mut p = problem_of(info, RAGGED);
    p.element_a = DType::Bf16;
    p.layout_b = Layout::Row;
    let why = info.supports(&p).unwrap_err().reasons.join("\n");
    assert_contains(&why, "A is bf16 but the kernel takes f16");
    assert_contains(&why, "B is row-major but the kernel takes column-major");
}

#[test]
fn host_schedule_needs_extents_on_the_host() {
    let host = kernel("grouped_f16_tn_host");
    let device = kernel("grouped_f16_tn_device");
    let resident = GroupedProblem::device_resident(
        (DType::F16, DType::F16, DType::F16),
        (Layout::Row, Layout::Column, Layout::Row),
        8,
    );
    assert!(device.supports(&resident).is_ok());
    assert_contains(
        &host.supports(&resident).unwrap_err().reasons.join("\n"),
        "precomputes its schedule on the host",
    );
}

#[test]
fn plan_checks_every_group_and_names_it() {
    let info = kernel("grouped_f16_tn_device");
    let mut groups = group_operands(info, RAGGED);
    assert!(plan(info, &ops(&groups), &H100).is_ok());

    // A short B buffer in group 2.
    groups[2].b.len -= 1;
    assert_contains(
        &invalid_message(plan(info, &ops(&groups), &H100)),
        "group 2: B (512×4096",
    );
    groups[2].b.len += 1;

    // Mismatched extents.
    let mut bad = groups.clone();
    bad[3].d.shape = MatrixShape::packed(8, 65, Layout::Row);
    assert_contains(
        &invalid_message(plan(info, &ops(&bad), &H100)),
        "group 3: D is 8×65 but A·B is 8×64",
    );

    // beta without C in a group with output; an empty group needs none.
    let with_beta = GroupedOperands {
        beta: 0.5,
        ..ops(&groups)
    };
    assert_contains(
        &invalid_message(plan(info, &with_beta, &H100)),
        "group 0: beta is 0.5 but the group has no C",
    );

    // A misaligned address in group 3's A (2 bytes off 16).
    let mut bad = groups.clone();
    bad[3].a.address += 2;
    assert_contains(
        &invalid_message(plan(info, &ops(&bad), &H100)),
        "group 3: A starts at address",
    );

    // An empty group's buffers may be empty.
    let mut empty = groups.clone();
    empty[1].a.len = 0;
    empty[1].d.len = 0;
    assert!(plan(info, &ops(&empty), &H100).is_ok());

    // No groups.
    assert_contains(&invalid_message(plan(info, &ops(&[]), &H100)), "no groups");
}

#[test]
fn the_argument_block_holds_every_group() {
    let info = kernel("grouped_bf16_tn_device");
    let groups = group_operands(info, RAGGED);
    let planned = plan(info, &ops(&groups), &H100).unwrap();
    let layout = BlockLayout::new(RAGGED.len());
    assert_eq!(planned.layout, layout);
    assert_eq!(layout.bytes % 256, 0);
    let word = |at: usize| u64::from_le_bytes(planned.block[at..at + 8].try_into().unwrap());
    for (g, &(m, n, k)) in RAGGED.iter().enumerate() {
        let coord = &planned.block[12 * g..12 * g + 12];
        let int = |i: usize| i32::from_le_bytes(coord[4 * i..4 * i + 4].try_into().unwrap());
        assert_eq!((int(0), int(1), int(2)), (m as i32, n as i32, k as i32));
        assert_eq!(word(layout.offsets[1] + 8 * g), groups[g].a.address);
        assert_eq!(word(layout.offsets[2] + 8 * g), groups[g].b.address);
        // Without C, D is passed as C (beta is 0: it is not read).
        assert_eq!(word(layout.offsets[3] + 8 * g), groups[g].d.address);
        assert_eq!(word(layout.offsets[4] + 8 * g), groups[g].d.address);
        assert_eq!(word(layout.offsets[5] + 8 * g), k as u64); // row-major A: ld = k
        assert_eq!(word(layout.offsets[6] + 8 * g), k as u64); // column-major B: ld = k
        assert_eq!(word(layout.offsets[8] + 8 * g), n as u64); // row-major D: ld = n
    }
}

/// ABI arguments for `groups` with the block at a fake address.
fn abi_args(problems: &[abi::cutlass_aot_gemm_coord], occupancy: i32) -> abi::cutlass_aot_grouped_args {
    abi::cutlass_aot_grouped_args {
        group_count: problems.len() as i32,
        device_sms: 132,
        sm_occupancy: occupancy,
        threadblock_count: 0,
        raster_order: 0,
        max_swizzle: 0,
        arrays: BlockLayout::new(problems.len()).arrays(ADDR),
        host_problems: problems.as_ptr(),
        workspace: std::ptr::null_mut(),
        workspace_capacity: 0,
        host_workspace: std::ptr::null_mut(),
        encode_tiled: Some(cutlass_aot::gemm::no_tensor_map),
        alpha: 1.0,
        beta: 0.0,
        activation_arg: 0.0,
    }
}

fn coords(groups: &[(usize, usize, usize)]) -> Vec<abi::cutlass_aot_gemm_coord> {
    groups
        .iter()
        .map(|&(m, n, k)| abi::cutlass_aot_gemm_coord {
            m: m as i32,
            n: n as i32,
            k: k as i32,
        })
        .collect()
}

#[test]
fn every_grouped_kernel_prepares_params() {
    let problems = coords(RAGGED);
    for info in grouped_kernels() {
        let mut args = abi_args(&problems, 2);
        let mut host = vec![0u8; 1 << 20];
        let prepared = match info.prepare_grouped(&args) {
            Ok(p) => p,
            // Kernels with a workspace (2.x host schedule, every 3.x kernel) say how much.
            Err(e) => {
                assert_contains(&e.to_string(), "bytes of workspace");
                args.workspace = (ADDR + (64 << 20)) as *mut _;
                args.workspace_capacity = host.len() as u64;
                args.host_workspace = host.as_mut_ptr().cast();
                info.prepare_grouped(&args)
                    .unwrap_or_else(|e| panic!("{}: {e}", info.name))
            }
        };
        let launch = prepared.launch;
        assert!(
            launch.params_bytes > 0 && launch.params_bytes <= 4096,
            "{}",
            info.name
        );
        assert!(
            launch.shared_mem_bytes <= H100.max_shared_memory_per_block_optin,
            "{}",
            info.name
        );
        let grid = launch.grid[0] * launch.grid[1] * launch.grid[2];
        match info.api() {
            Api::Cutlass2x => {
                // One CTA per tile at most, and no more than the device holds at once (2 per SM).
                let t = info.tile();
                let tiles: u32 = RAGGED
                    .iter()
                    .map(|&(m, n, _)| (m.div_ceil(t.m as usize) * n.div_ceil(t.n as usize)) as u32)
                    .sum();
                assert_eq!(grid, tiles.min(264), "{}", info.name);
                let host_schedule =
                    matches!(info.operation, Operation::GemmGrouped(g) if g.schedule == GroupSchedule::Host);
                assert_eq!(launch.workspace_bytes > 0, host_schedule, "{}", info.name);
            }
            Api::Cutlass3x => {
                assert!((1..=132).contains(&grid), "{}: grid {:?}", info.name, launch.grid);
                assert!(launch.workspace_bytes > 0, "{}", info.name);
            }
        }
    }
}

#[test]
fn a_group_without_k_is_refused_by_the_host_code_too() {
    for info in grouped_kernels().filter(|k| k.api() == Api::Cutlass3x).take(1) {
        let problems = coords(&[(64, 64, 0)]);
        let mut args = abi_args(&problems, 1);
        let mut host = vec![0u8; 1 << 20];
        args.workspace = (ADDR + (64 << 20)) as *mut _;
        args.workspace_capacity = host.len() as u64;
        args.host_workspace = host.as_mut_ptr().cast();
        assert!(info.prepare_grouped(&args).is_err(), "{}", info.name);
    }
}

#[test]
fn grouped_kernels_run_only_on_their_architecture() {
    for info in grouped_kernels() {
        let groups = group_operands(info, RAGGED);
        let a100 = cutlass_aot::device::DeviceProps {
            name: "NVIDIA A100-SXM4-80GB",
            compute_capability: 80,
            ..H100
        };
        let result = plan(info, &ops(&groups), &a100);
        match info.api() {
            Api::Cutlass2x => assert!(result.is_ok(), "{}: {:?}", info.name, result.err()),
            Api::Cutlass3x => assert!(
                matches!(result, Err(cutlass_aot::Error::UnsupportedDevice { .. })),
                "{}",
                info.name
            ),
        }
    }
}

#[test]
fn dispatch_picks_a_hopper_kernel_without_idle_cluster_halves() {
    let bf16 = (DType::Bf16, DType::Bf16, DType::Bf16);
    let tn = (Layout::Row, Layout::Column, Layout::Row);
    let registry = &kernels::REGISTRY;
    // Mixtral's up projection: 8 experts of 1024 rows.
    let mixtral =
        GroupedProblem::new(bf16, tn, vec![GroupShape::new(1024, 28672, 4096); 8]).on_compute_capability(90);
    let k = cutlass_aot::grouped::select(registry, &mixtral, 132, None).unwrap();
    assert_eq!(k.api(), Api::Cutlass3x, "{}", k.name);
    assert_eq!(k.tile().as_array(), [128, 256, 64], "{}", k.name);
    // DeepSeek's experts of 128 rows: a 2x1 cluster would run an idle CTA beside every tile.
    let deepseek =
        GroupedProblem::new(bf16, tn, vec![GroupShape::new(128, 4096, 7168); 256]).on_compute_capability(90);
    let k = cutlass_aot::grouped::select(registry, &deepseek, 132, None).unwrap();
    assert_eq!(k.design.cluster().m, 1, "{}", k.name);
    // Device-resident extents: picked for the typical group.
    let resident = GroupedProblem::device_resident(bf16, tn, 256).on_compute_capability(90);
    let k = cutlass_aot::grouped::select(registry, &resident, 132, Some((128, 4096, 7168))).unwrap();
    assert_eq!(k.design.cluster().m, 1, "{}", k.name);
    // An A100 gets a 2.x kernel, and never one with a fused activation.
    let f16 = GroupedProblem::new(
        (DType::F16, DType::F16, DType::F16),
        tn,
        vec![GroupShape::new(300, 512, 256); 4],
    )
    .on_compute_capability(80);
    let k = cutlass_aot::grouped::select(registry, &f16, 108, None).unwrap();
    assert_eq!(k.api(), Api::Cutlass2x, "{}", k.name);
    assert!(k.is_plain(), "{}", k.name);
}

#[test]
fn dispatch_explains_a_refusal_in_a_few_lines() {
    let e5m2 = GroupedProblem::new(
        (DType::E5m2, DType::E5m2, DType::Bf16),
        (Layout::Row, Layout::Column, Layout::Row),
        vec![GroupShape::new(64, 64, 64)],
    )
    .on_compute_capability(90);
    let message = cutlass_aot::grouped::select(&kernels::REGISTRY, &e5m2, 132, None)
        .unwrap_err()
        .to_string();
    assert_contains(&message, "no grouped kernel can run this problem");
    // Kernels of other types explain nothing: one sentence and the signatures there are.
    assert_contains(
        &message,
        "no grouped kernel takes A e5m2 row-major, B e5m2 column-major, C/D bf16 row-major",
    );
    assert_contains(&message, "bf16/bf16/bf16 tnt");
    assert!(!message.contains("but the kernel takes"), "{message}");
    // Kernels of the right types: each distinct reason once, with a count.
    let misaligned = GroupedProblem::new(
        (DType::Bf16, DType::Bf16, DType::Bf16),
        (Layout::Row, Layout::Column, Layout::Row),
        vec![GroupShape::new(64, 64, 100); 3],
    )
    .on_compute_capability(90);
    let message = cutlass_aot::grouped::select(&kernels::REGISTRY, &misaligned, 132, None)
        .unwrap_err()
        .to_string();
    assert_contains(&message, "group 0 (and 2 more): A has 100 columns");
    let clauses = message.matches("; ").count() + 1;
    assert!(clauses <= 4, "{clauses} clauses: {message}");
}
