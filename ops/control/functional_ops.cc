// ops::Case, ops::MapFn, ops::Scan, ops::Foldl and ops::Foldr (ops/control_flow.h): TensorFlow
// 1.x's tf.case, tf.map_fn, tf.scan, tf.foldl and tf.foldr, built on Cond and WhileLoop.
//
// The loops run an index i over the elements, each iteration reading Gather(elems, i). MapFn
// and Scan stack their results in a loop variable, iteration i writing its row i in place
// (InplaceUpdate: O(n) copies, and a gradient that keeps no copy of it per iteration). Where the
// result's shape is fully known (fn's static shape, the accumulator's), that variable is the
// [n] + shape result itself, made before the loop. Where it is known only at run time, the
// variable is [n, the result's size], made by the first iteration (MapFn: a Cond in the body) or
// from the initial accumulator (Scan), and after the loop a Reshape gives [n] + the element
// shape (so an empty result keeps its rank). Strings, which InplaceUpdate cannot copy, are
// appended to a flat variable with Concat (O(n^2) copies, as there is no TensorArray).
#include <fmt/format.h>

#include "placeflow/ops/control/control_util.h"
#include "placeflow/ops/control_flow.h"
#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/ops.h"

namespace pf::ops {
namespace {

using Vars = std::vector<Output>;

bool IsBoolScalar(const Output& x) {
  return x.dtype() == DT_BOOL && (x.shape().unknown_rank() || x.shape().rank() == 0);
}

std::vector<int32_t> Dims32(const pf::Shape& s, int32_t unknown_as) {
  std::vector<int32_t> dims;
  for (int64_t d : s.dims()) dims.push_back(d < 0 ? unknown_as : static_cast<int32_t>(d));
  return dims;
}

// ---- Case ----

std::string PredicateNames(const std::vector<CasePair>& pairs) {
  std::vector<std::string> names;
  for (const CasePair& p : pairs) names.push_back(p.first.name());
  return fmt::format("{}", fmt::join(names, ", "));
}

// The predicates as one bool vector (what the checks show).
Output Stacked(const Scope& s, const std::vector<CasePair>& pairs) {
  Vars parts;
  for (const CasePair& p : pairs) parts.push_back(Reshape(s, p.first, {1}));
  return parts.size() == 1 ? parts[0] : Concat(s, parts, 0);
}

void CheckPairs(const std::string& name, const std::vector<CasePair>& pairs, bool has_default) {
  if (pairs.empty() && !has_default) {
    ThrowError(errors::InvalidArgument(
        "Case '", name, "' needs at least one (predicate, fn) pair or a default fn"));
  }
  for (size_t k = 0; k < pairs.size(); ++k) {
    const Output& pred = pairs[k].first;
    if (pred.node == nullptr || !pairs[k].second)
      ThrowError(
          errors::InvalidArgument("Case '", name, "': pair ", k, " has no predicate or no fn"));
    if (!IsBoolScalar(pred)) {
      ThrowError(errors::InvalidArgument("Case '", name, "': predicate ", k, " ('", pred.name(),
                                         "') must be a bool scalar, got ", DTypeName(pred.dtype()),
                                         " ", pred.shape().ToString()));
    }
  }
}

// `out`, each through an Identity that waits for `check`.
Vars AfterCheck(const Scope& s, Operation check, Vars out) {
  for (Output& o : out) o = Identity(s.WithControlDependencies({check}), o);
  return out;
}

}  // namespace

std::vector<Output> Case(const Scope& s, const std::vector<CasePair>& pred_fn_pairs,
                         const BranchFn& default_fn, bool exclusive) {
  const std::string name = s.GetUniqueNameForOp("case");
  const Scope cs = s.WithExactNameScope(name);
  CheckPairs(name, pred_fn_pairs, static_cast<bool>(default_fn));
  std::vector<CasePair> chain = pred_fn_pairs;
  const std::string names = PredicateNames(pred_fn_pairs);
  Output stacked;
  if (!pred_fn_pairs.empty()) stacked = Stacked(cs.WithOpName("preds"), pred_fn_pairs);
  BranchFn fallback = default_fn;
  if (!fallback) {
    // TensorFlow's: the last pair's fn is the default, run only when its predicate is true.
    const CasePair last = chain.back();
    chain.pop_back();
    fallback = [last, stacked, names, name](const Scope& b) {
      Operation check = Assert(b.WithOpName("assert_one_true"), last.first, {stacked},
                               fmt::format("Case '{}': none of the conditions ({}) evaluated as "
                                           "True; their values:",
                                           name, names));
      const Scope after = b.WithControlDependencies({check});
      return AfterCheck(b, check, last.second(after));
    };
  }
  // The first pair's Cond holds the second's in its false branch, and so on.
  std::function<Vars(const Scope&, size_t)> build = [&](const Scope& b, size_t k) -> Vars {
    if (k == chain.size()) return fallback(b);
    return Cond(b, chain[k].first, chain[k].second,
                [&build, k](const Scope& f) { return build(f, k + 1); });
  };
  Vars out = build(cs, 0);
  if (exclusive && pred_fn_pairs.size() > 1) {
    Output count = Sum(cs, Cast(cs, stacked, DT_INT32));
    Operation check = Assert(
        cs.WithOpName("assert_at_most_one_true"), Less(cs, count, ConstInt(cs, 2)), {stacked},
        fmt::format("Case '{}': exclusive=true but more than one of the conditions ({}) "
                    "evaluated as True; their values:",
                    name, names));
    out = AfterCheck(cs, check, out);
  }
  return out;
}

namespace {

// ---- the loops ----

// What every loop builder checks and computes first: its name scope, the number of elements.
struct Loop {
  const char* builder;  // "MapFn", ... (for messages)
  std::string name;     // the name scope ("map", ...)
  Scope scope;
  Output elems;
  int64_t static_n = -1;
  Output n;  // int32 scalar
  int parallel_iterations = 10;

  Loop(const Scope& s, const char* b, const char* default_name, Output e, int parallel)
      : builder(b),
        name(s.GetUniqueNameForOp(default_name)),
        scope(s.WithExactNameScope(name)),
        elems(e),
        parallel_iterations(parallel) {
    if (elems.node == nullptr)
      ThrowError(errors::InvalidArgument(builder, " '", name, "': elems is not a tensor"));
    const pf::Shape& shape = elems.shape();
    if (!shape.unknown_rank() && shape.rank() == 0) {
      ThrowError(errors::InvalidArgument(builder, " '", name, "': elems ('", elems.name(),
                                         "') must have rank 1 or more (its elements are its slices "
                                         "along dimension 0), not be a scalar"));
    }
    if (!shape.unknown_rank()) static_n = shape.dim(0);
    n = static_n >= 0 ? ConstInt(scope.WithOpName("n"), static_cast<int32_t>(static_n))
                      : Gather(scope.WithOpName("n"), Shape(scope, elems), ConstInt(scope, 0));
  }

  // The index of the first element a loop reads (the last one when reversed).
  Output First(bool reverse) const {
    return reverse ? Sub(scope, n, ConstInt(scope, 1)) : ConstInt(scope, 0);
  }
  Output Next(const Scope& b, Output i, bool reverse) const {
    return reverse ? Sub(b, i, ConstInt(b, 1)) : Add(b, i, ConstInt(b, 1));
  }
  Output More(const Scope& b, Output i, bool reverse) const {
    return reverse ? Greater(b, i, ConstInt(b, -1)) : Less(b, i, n);
  }
  Output Element(const Scope& b, Output i) const { return Gather(b.WithOpName("elem"), elems, i); }

  Vars Run(const LoopCondFn& cond, const LoopBodyFn& body, const Vars& init,
           std::vector<pf::Shape> invariants) const {
    WhileOptions o;
    o.parallel_iterations = parallel_iterations;
    o.shape_invariants = std::move(invariants);
    return WhileLoop(scope.WithOpName("while"), cond, body, init, o);
  }

  // fn's next accumulator must keep the accumulator's dtype and shape.
  void CheckAccumulator(const Output& init, const Output& next) const {
    if (next.node == nullptr)
      ThrowError(errors::InvalidArgument(builder, " '", name, "': fn returned no tensor"));
    if (next.dtype() != init.dtype()) {
      ThrowError(errors::InvalidArgument(
          builder, " '", name, "': fn returns ", DTypeName(next.dtype()), " ('", next.name(),
          "') but the accumulator is ", DTypeName(init.dtype()), " ('", init.name(),
          "'): fn must keep the accumulator's dtype"));
    }
    if (!control::FitsInvariant(next.shape(), init.shape())) {
      ThrowError(errors::InvalidArgument(
          builder, " '", name, "': fn returns shape ", next.shape().ToString(), " ('", next.name(),
          "') but the accumulator has shape ", init.shape().ToString(), " ('", init.name(),
          "'): fn must keep the accumulator's shape"));
    }
  }

  // The flat values of the loop's results (`flat`) as [n] + `elem_shape` (an int32 vector), its
  // static shape [n] + `elem_static` where known.
  Output Stack(Output flat, Output elem_shape, const pf::Shape& elem_static) const {
    Output n_vec = static_n >= 0
                       ? ConstInt(scope, std::vector<int32_t>{static_cast<int32_t>(static_n)})
                       : Reshape(scope, n, {1});
    Output shape = Concat(scope.WithOpName("result_shape"), {n_vec, elem_shape}, 0);
    Output out = Reshape(scope.WithOpName("result"), flat, shape);
    if (!elem_static.unknown_rank()) {
      pf::Shape known = elem_static;
      known.InsertDim(0, static_n);
      scope.graph()->SetOutputShape(out.node, out.index, out.shape().MergeWith(known));
    }
    return out;
  }
};

// Whether a loop's results of this shape and dtype go into rows written in place: a fully
// defined shape, and not strings (InplaceUpdate copies bytes).
bool InRows(const pf::Shape& elem, DType dtype) {
  return elem.IsFullyDefined() && dtype != DT_STRING;
}

// Zeros [n] + `row` (an int32 vector) of `dtype`, made in scope `s`.
Output Rows(const Loop& l, const Scope& s, Output row, DType dtype) {
  Output dims = Concat(s, {Reshape(s, l.n, {1}), row}, 0);
  return Fill(s.WithOpName("rows"), dims, Cast(s, Const(s, 0.f), dtype));
}

// Zeros [n] + `elem` (fully defined) of `dtype`: the rows a loop writes in place.
Output RowsFor(const Loop& l, const pf::Shape& elem, DType dtype) {
  return Rows(l, l.scope, ConstInt(l.scope, Dims32(elem, 0)), dtype);
}

// A result whose shape is known only at run time goes in flat rows, [n, its size], made by the
// first iteration (index `i` 0), which knows the size (`flat`: the result as a vector), and
// handed on to the next iterations (`acc`).
Output FlatRowsIn(const Loop& l, const Scope& b, Output i, Output flat, Output acc) {
  return Cond(
      b.WithOpName("first_rows"), Equal(b, i, ConstInt(b, 0)),
      [&](const Scope& t) { return Vars{Rows(l, t, Shape(t, flat), flat.dtype())}; },
      [&](const Scope& f) { return Vars{Identity(f, acc)}; })[0];
}

// An empty flat accumulator of `dtype`.
Output EmptyFlat(const Scope& s, DType dtype) {
  return Const(s.WithOpName("empty"), Tensor(dtype, pf::Shape{0}));
}

// MapFn's check, inside the loop, that fn's result has the shape it had in the iteration before
// (static rank `rank`, some dimensions unknown): `prev` is that shape ([] in iteration 0).
Operation SameShapeCheck(const Loop& l, const Scope& b, Output prev, Output shape, int rank) {
  Output expected = Slice(b, Concat(b, {prev, shape}, 0), {0}, {rank});
  Output same = Equal(b, Sum(b, Cast(b, Equal(b, expected, shape), DT_INT32)), ConstInt(b, rank));
  return Assert(b.WithOpName("check_shape"), same, {expected, shape},
                fmt::format("{} '{}': fn's results must all have one shape (as TensorFlow's "
                            "TensorArray requires); previous and current shapes:",
                            l.builder, l.name));
}

}  // namespace

Output MapFn(const Scope& s, const MapFnFn& fn, Output elems, const MapFnOptions& options) {
  const Loop l(s, "MapFn", "map", elems, options.parallel_iterations);
  if (!fn) ThrowError(errors::InvalidArgument("MapFn '", l.name, "' needs a fn"));
  const DType dtype = options.dtype == DT_INVALID ? elems.dtype() : options.dtype;
  pf::Shape y_static;
  // Loop variables: the index, the shape of fn's last result, the flat results so far.
  auto body = [&](const Scope& b, const Vars& v) {
    Output y = fn(b, l.Element(b, v[0]));
    if (y.node == nullptr)
      ThrowError(errors::InvalidArgument("MapFn '", l.name, "': fn returned no tensor"));
    if (y.dtype() != dtype) {
      ThrowError(errors::InvalidArgument(
          "MapFn '", l.name, "': fn returns ", DTypeName(y.dtype()), " ('", y.name(),
          "') but the result's dtype is ", DTypeName(dtype),
          options.dtype == DT_INVALID ? " (elems'; set MapFnOptions::dtype when fn changes it)"
                                      : " (MapFnOptions::dtype)"));
    }
    y_static = y.shape();
    // Rows written in place (the loop variable gets its [n] + shape zeros after the loop is
    // built, when fn's shape is known).
    if (InRows(y_static, dtype))
      return Vars{l.Next(b, v[0], false), v[1], InplaceUpdate(b, v[2], v[0], y)};
    Output shape = Shape(b, y);
    std::vector<Operation> checks;
    if (!y_static.unknown_rank() && !y_static.IsFullyDefined())
      checks.push_back(SameShapeCheck(l, b, v[1], shape, y_static.rank()));
    Output flat = Reshape(b, y, {-1});
    if (dtype == DT_STRING) {
      return Vars{l.Next(b, v[0], false), shape,
                  Concat(b.WithControlDependencies(checks), {v[2], flat}, 0)};
    }
    Output rows = FlatRowsIn(l, b, v[0], flat, v[2]);
    return Vars{l.Next(b, v[0], false), shape,
                InplaceUpdate(b.WithControlDependencies(checks), rows, v[0], flat)};
  };
  const Scope& ls = l.scope;
  Output empty = EmptyFlat(ls, dtype);
  Vars out = l.Run([&](const Scope& b, const Vars& v) { return l.More(b, v[0], false); }, body,
                   {ConstInt(ls, 0), ConstInt(ls, std::vector<int32_t>{}), empty},
                   {pf::Shape{}, pf::Shape{-1}, pf::Shape::Unknown()});
  Output elem_shape = out[1];
  if (InRows(y_static, dtype)) {
    const Output enter = internal::WhileLoops(ls.graph()).back().enters[2];
    Output rows = RowsFor(l, y_static, dtype);
    ls.graph()->UpdateEdge(rows, enter.node, 0);
    ls.graph()->SetOutputShape(enter.node, 0, rows.shape());
    ls.graph()->RemoveNode(empty.node);  // made here, used by nothing now
    elem_shape = ConstInt(ls, Dims32(y_static, 0));
  } else if (!y_static.unknown_rank()) {
    // No iteration ran: the static dims, the unknown ones 0 (the result is empty either way).
    elem_shape = Slice(ls, Concat(ls, {out[1], ConstInt(ls, Dims32(y_static, 0))}, 0), {0},
                       {y_static.rank()});
  }
  return l.Stack(out[2], elem_shape, y_static);
}

namespace {

// Scan, forwards or reversed: loop variables the index, the accumulator, the flat results.
Output ScanLoop(const Loop& l, const AccumulateFn& fn, std::optional<Output> initializer,
                bool reverse) {
  const Scope& ls = l.scope;
  Output i0 = l.First(reverse), a0, flat0;
  if (initializer) {
    a0 = *initializer;
  } else {
    a0 = Gather(ls.WithOpName("first"), l.elems, i0);
  }
  // The accumulators written in place, row i for element i: rows of their shape where it is
  // known, else flat rows of their size (the initial accumulator's, at run time; a later one of
  // another size is an error, as in TensorFlow's TensorArray), strings appended (Concat).
  const bool rows = InRows(a0.shape(), a0.dtype()), in_place = a0.dtype() != DT_STRING;
  auto row_of = [&](const Scope& s, Output a) { return rows ? a : Reshape(s, a, {-1}); };
  if (in_place) {
    flat0 = rows ? RowsFor(l, a0.shape(), a0.dtype())
                 : Rows(l, ls, Shape(ls, row_of(ls, a0)), a0.dtype());
    if (!initializer) flat0 = InplaceUpdate(ls, flat0, i0, row_of(ls, a0));
  } else {
    flat0 = initializer ? EmptyFlat(ls, a0.dtype()) : Reshape(ls, a0, {-1});
  }
  if (!initializer) i0 = l.Next(ls, i0, reverse);
  auto body = [&](const Scope& b, const Vars& v) {
    Output a = fn(b, v[1], l.Element(b, v[0]));
    l.CheckAccumulator(a0, a);
    if (in_place)
      return Vars{l.Next(b, v[0], reverse), a, InplaceUpdate(b, v[2], v[0], row_of(b, a))};
    Output flat = Reshape(b, a, {-1});
    return Vars{l.Next(b, v[0], reverse), a,
                reverse ? Concat(b, {flat, v[2]}, 0) : Concat(b, {v[2], flat}, 0)};
  };
  const pf::Shape acc_shape = rows ? flat0.shape() : in_place ? pf::Shape{-1, -1} : pf::Shape{-1};
  Vars out = l.Run([&](const Scope& b, const Vars& v) { return l.More(b, v[0], reverse); }, body,
                   {i0, a0, flat0}, {pf::Shape{}, a0.shape(), acc_shape});
  Output elem_shape =
      a0.shape().IsFullyDefined() ? ConstInt(ls, Dims32(a0.shape(), 0)) : Shape(ls, a0);
  return l.Stack(out[2], elem_shape, a0.shape());
}

Output FoldLoop(const Loop& l, const AccumulateFn& fn, std::optional<Output> initializer,
                bool reverse) {
  const Scope& ls = l.scope;
  Output i0 = l.First(reverse), a0;
  if (initializer) {
    a0 = *initializer;
  } else {
    a0 = Gather(ls.WithOpName("first"), l.elems, i0);
    i0 = l.Next(ls, i0, reverse);
  }
  auto body = [&](const Scope& b, const Vars& v) {
    Output a = fn(b, v[1], l.Element(b, v[0]));
    l.CheckAccumulator(a0, a);
    return Vars{l.Next(b, v[0], reverse), a};
  };
  return l.Run([&](const Scope& b, const Vars& v) { return l.More(b, v[0], reverse); }, body,
               {i0, a0}, {pf::Shape{}, a0.shape()})[1];
}

void CheckFn(const Loop& l, const AccumulateFn& fn, const std::optional<Output>& initializer) {
  if (!fn) ThrowError(errors::InvalidArgument(l.builder, " '", l.name, "' needs a fn"));
  if (initializer && initializer->node == nullptr)
    ThrowError(
        errors::InvalidArgument(l.builder, " '", l.name, "': the initializer is not a tensor"));
}

}  // namespace

Output Scan(const Scope& s, const AccumulateFn& fn, Output elems, std::optional<Output> initializer,
            const ScanOptions& options) {
  const Loop l(s, "Scan", "scan", elems, options.parallel_iterations);
  CheckFn(l, fn, initializer);
  return ScanLoop(l, fn, initializer, options.reverse);
}

Output Foldl(const Scope& s, const AccumulateFn& fn, Output elems,
             std::optional<Output> initializer, const FoldOptions& options) {
  const Loop l(s, "Foldl", "foldl", elems, options.parallel_iterations);
  CheckFn(l, fn, initializer);
  return FoldLoop(l, fn, initializer, false);
}

Output Foldr(const Scope& s, const AccumulateFn& fn, Output elems,
             std::optional<Output> initializer, const FoldOptions& options) {
  const Loop l(s, "Foldr", "foldr", elems, options.parallel_iterations);
  CheckFn(l, fn, initializer);
  return FoldLoop(l, fn, initializer, true);
}

}  // namespace pf::ops
