//! User kernels ("bring your own kernel"): a CUDA `extern "C"` kernel the manifest describes with a
//! typed parameter list, integer expressions for its launch shape, its buffers' lengths and its
//! requirements, and design values that discovery filters on. The generator checks and compiles
//! the expressions ([`Expr::compile`]); the runtime evaluates them ([`Expr::eval`]) on a launch's
//! arguments. One language for both, so what the build accepted is exactly what runs.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

use crate::{DType, Layout, Shape3};

spelled_enum! {
    /// The type of a scalar kernel parameter (its C type in the comment).
    ScalarType {
        /// `int32_t`
        I32 = "i32",
        /// `int64_t`
        I64 = "i64",
        /// `uint32_t`
        U32 = "u32",
        /// `uint64_t`
        U64 = "u64",
        /// `float`
        F32 = "f32",
        /// `double`
        F64 = "f64",
    }
}

impl ScalarType {
    /// The C type the kernel declares.
    pub fn c_type(self) -> &'static str {
        match self {
            ScalarType::I32 => "int32_t",
            ScalarType::I64 => "int64_t",
            ScalarType::U32 => "uint32_t",
            ScalarType::U64 => "uint64_t",
            ScalarType::F32 => "float",
            ScalarType::F64 => "double",
        }
    }

    pub fn bytes(self) -> usize {
        match self {
            ScalarType::I32 | ScalarType::U32 | ScalarType::F32 => 4,
            ScalarType::I64 | ScalarType::U64 | ScalarType::F64 => 8,
        }
    }

    /// Integer parameters can appear in expressions.
    pub fn is_integer(self) -> bool {
        !matches!(self, ScalarType::F32 | ScalarType::F64)
    }
}

spelled_enum! {
    /// What a kernel does with a buffer: only reads (`const T*`), writes, or both (`T*`).
    Access {
        Read = "read",
        Write = "write",
        ReadWrite = "read_write",
    }
}

impl Access {
    pub fn writes(self) -> bool {
        !matches!(self, Access::Read)
    }
}

/// One parameter of a user kernel, in the kernel's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    Scalar {
        name: &'static str,
        ty: ScalarType,
    },
    /// A device pointer to `len` elements of `element` (at least).
    Buffer {
        name: &'static str,
        element: DType,
        access: Access,
        /// The layout the kernel reads it in, where it is a matrix (discovery filters on it).
        layout: Option<Layout>,
        /// Elements the buffer must hold, from the scalar arguments.
        len: Expr,
    },
}

impl Param {
    pub fn name(&self) -> &'static str {
        match self {
            Param::Scalar { name, .. } | Param::Buffer { name, .. } => name,
        }
    }
}

/// What a user kernel computes, as discovery sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CustomOperation {
    /// The user's word for the operation (`gemm`, `softmax`, ...).
    pub operation: &'static str,
    pub params: &'static [Param],
}

impl CustomOperation {
    /// The parameter called `name`.
    pub fn param(&self, name: &str) -> Option<&'static Param> {
        self.params.iter().find(|p| p.name() == name)
    }

    /// The buffer parameters, in order.
    pub fn buffers(&self) -> impl Iterator<Item = &'static Param> {
        self.params.iter().filter(|p| matches!(p, Param::Buffer { .. }))
    }
}

/// A design value of a user kernel: an integer or a word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DesignValue {
    Int(i64),
    Word(&'static str),
}

impl fmt::Display for DesignValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DesignValue::Int(v) => write!(f, "{v}"),
            DesignValue::Word(w) => f.write_str(w),
        }
    }
}

/// A requirement of a user kernel on its arguments, with the reason shown when it fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub holds: Expr,
    pub reason: &'static str,
}

/// How a user kernel is built and launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CustomDesign {
    /// The code it is compiled to: `Cutlass2x` for portable code of its minimum architecture (runs
    /// there and on every newer one), `Cutlass3x` for sm_90a code (runs on Hopper only), as for
    /// CUTLASS kernels of the two generations.
    pub code: crate::Api,
    /// The tile the kernel computes per block ([1, 1, 1] when the manifest gives none).
    pub tile: Shape3,
    /// Every design value, by name (the manifest's `design` mapping; `tile_m`, `tile_n` and
    /// `tile_k` are the tile's).
    pub values: &'static [(&'static str, DesignValue)],
    pub grid: [Expr; 3],
    pub block: [Expr; 3],
    /// Dynamic shared memory, bytes.
    pub shared_memory: Expr,
    pub requires: &'static [Requirement],
}

impl CustomDesign {
    /// The design value called `name`.
    pub fn value(&self, name: &str) -> Option<DesignValue> {
        self.values.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

/// One step of a compiled expression, evaluated on a stack of `i64`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Const(i64),
    /// The integer scalar argument at this index of the parameter list.
    Arg(u16),
    Neg,
    Not,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    Min,
    Max,
    CeilDiv,
}

/// An integer expression over a kernel's integer arguments and design values, as the manifest
/// wrote it (`text`) and compiled to stack code (`code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Expr {
    pub text: &'static str,
    pub code: &'static [Op],
}

/// What a name in an expression stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Name {
    /// An integer argument (its index in the parameter list).
    Arg(u16),
    /// A design constant.
    Const(i64),
}

/// Why an expression could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EvalError {
    Overflow,
    DivisionByZero,
    /// The code is malformed (never from [`Expr::compile`]).
    Malformed,
}

impl fmt::Display for EvalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EvalError::Overflow => "overflows a 64-bit integer",
            EvalError::DivisionByZero => "divides by zero",
            EvalError::Malformed => "is malformed",
        })
    }
}

impl Expr {
    /// Compiles `text`: integers, names (resolved by `resolve`), `+ - * / %` (integer division,
    /// truncating), comparisons `< <= > >= == !=` (1 or 0), `&& || !`, parentheses, and the
    /// functions `ceil_div(a, b)`, `min(a, b)` and `max(a, b)`. Constant parts are folded.
    pub fn compile(text: &str, resolve: impl Fn(&str) -> Option<Name>) -> Result<Vec<Op>, String> {
        let tokens = tokenize(text)?;
        let mut parser = Parser {
            tokens: &tokens,
            at: 0,
            code: Vec::new(),
            resolve: &resolve,
        };
        parser.or()?;
        if let Some(token) = tokens.get(parser.at) {
            return Err(alloc::format!("unexpected `{token}` after a complete expression"));
        }
        Ok(fold(parser.code))
    }

    /// The value with integer arguments `args` (indexed like the parameter list; scalars of other
    /// types and buffers may hold anything).
    pub fn eval(&self, args: &[i64]) -> Result<i64, EvalError> {
        eval(self.code, args)
    }
}

/// Evaluates stack code.
pub fn eval(code: &[Op], args: &[i64]) -> Result<i64, EvalError> {
    let mut stack: Vec<i64> = Vec::with_capacity(8);
    for op in code {
        let value = match *op {
            Op::Const(v) => v,
            Op::Arg(i) => *args.get(i as usize).ok_or(EvalError::Malformed)?,
            Op::Neg | Op::Not => {
                let a = stack.pop().ok_or(EvalError::Malformed)?;
                match op {
                    Op::Neg => a.checked_neg().ok_or(EvalError::Overflow)?,
                    _ => (a == 0) as i64,
                }
            }
            binary => {
                let b = stack.pop().ok_or(EvalError::Malformed)?;
                let a = stack.pop().ok_or(EvalError::Malformed)?;
                apply(binary, a, b)?
            }
        };
        stack.push(value);
    }
    match stack.as_slice() {
        [v] => Ok(*v),
        _ => Err(EvalError::Malformed),
    }
}

fn apply(op: Op, a: i64, b: i64) -> Result<i64, EvalError> {
    let nonzero = |b: i64| {
        if b == 0 {
            Err(EvalError::DivisionByZero)
        } else {
            Ok(b)
        }
    };
    Ok(match op {
        Op::Add => a.checked_add(b).ok_or(EvalError::Overflow)?,
        Op::Sub => a.checked_sub(b).ok_or(EvalError::Overflow)?,
        Op::Mul => a.checked_mul(b).ok_or(EvalError::Overflow)?,
        Op::Div => a.checked_div(nonzero(b)?).ok_or(EvalError::Overflow)?,
        Op::Rem => a.checked_rem(nonzero(b)?).ok_or(EvalError::Overflow)?,
        Op::CeilDiv => {
            let b = nonzero(b)?;
            let q = a.checked_div(b).ok_or(EvalError::Overflow)?;
            // Rounds toward +infinity for every sign.
            if a % b != 0 && ((a < 0) == (b < 0)) {
                q + 1
            } else {
                q
            }
        }
        Op::Min => a.min(b),
        Op::Max => a.max(b),
        Op::Lt => (a < b) as i64,
        Op::Le => (a <= b) as i64,
        Op::Gt => (a > b) as i64,
        Op::Ge => (a >= b) as i64,
        Op::Eq => (a == b) as i64,
        Op::Ne => (a != b) as i64,
        Op::And => (a != 0 && b != 0) as i64,
        Op::Or => (a != 0 || b != 0) as i64,
        Op::Const(_) | Op::Arg(_) | Op::Neg | Op::Not => return Err(EvalError::Malformed),
    })
}

/// Folds every operation whose operands are constants (keeps errors for run time: a constant
/// division by zero is reported by the generator, which evaluates folded constants itself).
fn fold(code: Vec<Op>) -> Vec<Op> {
    let mut out: Vec<Op> = Vec::with_capacity(code.len());
    for op in code {
        let folded = match op {
            Op::Neg | Op::Not => match out.last() {
                Some(Op::Const(a)) => eval(&[Op::Const(*a), op], &[]).ok(),
                _ => None,
            },
            Op::Const(_) | Op::Arg(_) => None,
            _ => match out.as_slice() {
                [.., Op::Const(a), Op::Const(b)] => apply(op, *a, *b).ok(),
                _ => None,
            },
        };
        match (folded, op) {
            (Some(v), Op::Neg | Op::Not) => {
                out.pop();
                out.push(Op::Const(v));
            }
            (Some(v), _) => {
                out.truncate(out.len() - 2);
                out.push(Op::Const(v));
            }
            (None, _) => out.push(op),
        }
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Int(i64),
    Ident(String),
    Sym(&'static str),
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Int(v) => write!(f, "{v}"),
            Token::Ident(s) => f.write_str(s),
            Token::Sym(s) => f.write_str(s),
        }
    }
}

const SYMBOLS: &[&str] = &[
    "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "!", "(", ")", ",",
];

fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            let digits = &text[start..i];
            let value = digits
                .parse::<i64>()
                .map_err(|_| alloc::format!("the number {digits} does not fit a 64-bit integer"))?;
            tokens.push(Token::Int(value));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            tokens.push(Token::Ident(text[start..i].to_string()));
        } else if let Some(symbol) = SYMBOLS.iter().find(|s| text[i..].starts_with(**s)) {
            tokens.push(Token::Sym(symbol));
            i += symbol.len();
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return Err(alloc::format!(
                "`{ch}` is not part of the expression language (integers, names, + - * / %, \
                 comparisons, && || !, parentheses, ceil_div / min / max)"
            ));
        }
    }
    if tokens.is_empty() {
        return Err("the expression is empty".to_string());
    }
    Ok(tokens)
}

struct Parser<'a, R: Fn(&str) -> Option<Name>> {
    tokens: &'a [Token],
    at: usize,
    code: Vec<Op>,
    resolve: &'a R,
}

impl<R: Fn(&str) -> Option<Name>> Parser<'_, R> {
    fn peek_sym(&self) -> Option<&'static str> {
        match self.tokens.get(self.at) {
            Some(Token::Sym(s)) => Some(s),
            _ => None,
        }
    }

    fn expect(&mut self, symbol: &str) -> Result<(), String> {
        match self.tokens.get(self.at) {
            Some(Token::Sym(s)) if *s == symbol => {
                self.at += 1;
                Ok(())
            }
            Some(other) => Err(alloc::format!("expected `{symbol}`, found `{other}`")),
            None => Err(alloc::format!("expected `{symbol}` at the end")),
        }
    }

    /// One precedence level: `next` operands joined by the symbols of `ops`.
    fn level(&mut self, ops: &[(&str, Op)], next: fn(&mut Self) -> Result<(), String>) -> Result<(), String> {
        next(self)?;
        while let Some(op) = self
            .peek_sym()
            .and_then(|s| ops.iter().find(|(sym, _)| *sym == s).map(|(_, op)| *op))
        {
            self.at += 1;
            next(self)?;
            self.code.push(op);
        }
        Ok(())
    }

    fn or(&mut self) -> Result<(), String> {
        self.level(&[("||", Op::Or)], Self::and)
    }

    fn and(&mut self) -> Result<(), String> {
        self.level(&[("&&", Op::And)], Self::comparison)
    }

    fn comparison(&mut self) -> Result<(), String> {
        self.level(
            &[
                ("<=", Op::Le),
                (">=", Op::Ge),
                ("==", Op::Eq),
                ("!=", Op::Ne),
                ("<", Op::Lt),
                (">", Op::Gt),
            ],
            Self::sum,
        )
    }

    fn sum(&mut self) -> Result<(), String> {
        self.level(&[("+", Op::Add), ("-", Op::Sub)], Self::product)
    }

    fn product(&mut self) -> Result<(), String> {
        self.level(&[("*", Op::Mul), ("/", Op::Div), ("%", Op::Rem)], Self::unary)
    }

    fn unary(&mut self) -> Result<(), String> {
        match self.peek_sym() {
            Some("-") => {
                self.at += 1;
                self.unary()?;
                self.code.push(Op::Neg);
                Ok(())
            }
            Some("!") => {
                self.at += 1;
                self.unary()?;
                self.code.push(Op::Not);
                Ok(())
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> Result<(), String> {
        let token = self
            .tokens
            .get(self.at)
            .cloned()
            .ok_or_else(|| "the expression ends where a value belongs".to_string())?;
        self.at += 1;
        match token {
            Token::Int(v) => self.code.push(Op::Const(v)),
            Token::Sym("(") => {
                self.or()?;
                self.expect(")")?;
            }
            Token::Ident(name) if self.peek_sym() == Some("(") => {
                let op = match name.as_str() {
                    "ceil_div" => Op::CeilDiv,
                    "min" => Op::Min,
                    "max" => Op::Max,
                    _ => {
                        return Err(alloc::format!(
                            "unknown function `{name}`; allowed: ceil_div, min, max"
                        ))
                    }
                };
                self.at += 1;
                self.or()?;
                self.expect(",")?;
                self.or()?;
                self.expect(")")?;
                self.code.push(op);
            }
            Token::Ident(name) => match (self.resolve)(&name) {
                Some(Name::Arg(i)) => self.code.push(Op::Arg(i)),
                Some(Name::Const(v)) => self.code.push(Op::Const(v)),
                None => return Err(alloc::format!("unknown name `{name}`")),
            },
            Token::Sym(s) => return Err(alloc::format!("unexpected `{s}` where a value belongs")),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, args: &[i64]) -> Result<i64, String> {
        let code = Expr::compile(text, |name| match name {
            "m" => Some(Name::Arg(0)),
            "n" => Some(Name::Arg(1)),
            "tile_m" => Some(Name::Const(32)),
            _ => None,
        })?;
        eval(&code, args).map_err(|e| e.to_string())
    }

    #[test]
    fn precedence_functions_and_folding() {
        assert_eq!(run("1 + 2 * 3", &[]), Ok(7));
        assert_eq!(run("(1 + 2) * 3", &[]), Ok(9));
        assert_eq!(run("ceil_div(m, tile_m)", &[65, 0]), Ok(3));
        assert_eq!(run("ceil_div(-5, 2)", &[]), Ok(-2));
        assert_eq!(run("m * n <= 100 && !(m == 0)", &[10, 10]), Ok(1));
        assert_eq!(run("m % tile_m == 0 || n > 3", &[33, 2]), Ok(0));
        assert_eq!(run("max(m, n) - min(m, n)", &[3, 9]), Ok(6));
        assert_eq!(run("-m", &[4, 0]), Ok(-4));
        let folded = Expr::compile("tile_m * 2 + m", |n| {
            (n == "m").then_some(Name::Arg(0)).or(Some(Name::Const(32)))
        });
        assert_eq!(folded, Ok(alloc::vec![Op::Const(64), Op::Arg(0), Op::Add]));
    }

    #[test]
    fn errors_say_what_is_wrong() {
        assert_eq!(run("m / n", &[1, 0]), Err("divides by zero".into()));
        assert_eq!(
            run("m * n", &[i64::MAX, 2]),
            Err("overflows a 64-bit integer".into())
        );
        assert!(run("k + 1", &[]).unwrap_err().contains("unknown name `k`"));
        assert!(run("pow(m, 2)", &[])
            .unwrap_err()
            .contains("unknown function `pow`"));
        assert!(run("m +", &[])
            .unwrap_err()
            .contains("ends where a value belongs"));
        assert!(run("(m", &[]).unwrap_err().contains("expected `)`"));
        assert!(run("m m", &[]).unwrap_err().contains("unexpected `m`"));
        assert!(run("m ^ 2", &[]).unwrap_err().contains("`^` is not part"));
        assert!(run("", &[]).unwrap_err().contains("empty"));
    }
}
