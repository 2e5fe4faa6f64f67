// Temporary: top estimated ways for one problem on a fake H100/H200 (not committed).
use cutlass_aot::device::DeviceProps;
use cutlass_aot::dispatch::{self, Signature};
use cutlass_aot::kernels::{self, REGISTRY};
use cutlass_aot::model::{DType, Layout};
use cutlass_aot::{GemmOperands, MatrixShape, Operand};
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let dtype = match a[0].as_str() { "f16" => DType::F16, "bf16" => DType::Bf16, "f32" => DType::F32, _ => DType::F64 };
    let l = |c: char| if c == 't' { Layout::Row } else { Layout::Column };
    let lay: Vec<char> = a[1].chars().collect();
    let (m, n, k, b): (usize, usize, usize, usize) = (a[2].parse().unwrap(), a[3].parse().unwrap(), a[4].parse().unwrap(), a[5].parse().unwrap());
    let layouts = [l(lay[0]), l(lay[1]), Layout::Row];
    let dev = DeviceProps { name: "NVIDIA H100 80GB HBM3", multiprocessors: 132, compute_capability: 90, max_shared_memory_per_block_optin: 232_448 };
    let sig = Signature::uniform(dtype, layouts);
    let bytes = (dtype.bits() / 8) as u64;
    let sh = |r: usize, c: usize, lay: Layout| { let mut s = MatrixShape::packed(r, c, lay); s.batch_count = b; s.batch_stride = r * c; s };
    let op = |addr: u64, r: usize, c: usize, lay| Operand { shape: sh(r, c, lay), len: r * c * b, address: addr };
    let _ = bytes;
    let ops = GemmOperands { a: op(0x7f00_0000_0000, m, k, layouts[0]), b: op(0x7f10_0000_0000, k, n, layouts[1]), c: None, d: op(0x7f20_0000_0000, m, n, Layout::Row), alpha: 1.0, beta: 0.0, split_k_slices: 1, fusion: Default::default() };
    let table = cutlass_aot::select::device_table(kernels::TABLES, dev.name, 90).unwrap();
    let ways = dispatch::ways(&REGISTRY, sig, &ops, &dev, Default::default());
    let mut est = dispatch::context(table, &dev).estimate_all(ways, &[]);
    est.sort_by(|x, y| x.estimate_us.total_cmp(&y.estimate_us));
    for e in est.iter().take(a.get(6).map_or(12, |s| s.parse().unwrap())) {
        println!("{:8.1} {:?} {:?} s{} {} [{}]", e.estimate_us, e.way.orientation, e.way.staged, e.split_k, e.kernel.name, e.basis.describe());
    }
}
