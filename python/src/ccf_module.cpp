// The Python module ccf._ccf: the library's filters and CuckooMap for Python and NumPy.
//
// Layers, lowest first:
//   keys      a Python key (int, bytes, str) as the library's uint64 or byte-string key; a
//             batch (a NumPy array or any iterable) as a span of either, without a copy for
//             C-contiguous uint64/int64 arrays.
//   Shared    the C++ object with the lock that makes every Python call safe (below).
//   AnyShape  a filter whose shape (fingerprint bits, slots) is chosen at run time: one of
//             several instantiations, each call visiting the one held.
//   bind_*    one Python class per filter family; what a class offers follows from what its C++
//             type can do (erase, save), so a new family is one bind_* call.
//
// Threads and the GIL. Single-item calls hold the GIL. Batch calls release it (keys and the
// output array stay referenced by the call). Shared::guard_ keeps them apart:
//   sequential types  batch reads take it shared, batch writes exclusive; single calls take it
//                     (shared to read, exclusive to write) only while a batch call runs, which
//                     they know from a count kept under the GIL. Calls from several Python
//                     threads are serialized, never racing.
//   concurrent types  single calls take nothing (the C++ object is concurrent), batch calls take
//                     it shared; save, clear and pickling take it exclusive (the library's save
//                     and clear are not concurrent with writers).
// Invariant that rules out a deadlock with the GIL: no thread waits for the GIL while it holds
// guard_ (batch calls release the lock before they take the GIL back; calls that hold the GIL
// never release it while they hold the lock).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ccf/bloom_filter.hpp"
#include "ccf/concurrent/striped_cuckoo_filter.hpp"
#include "ccf/cuckoo_filter.hpp"
#include "ccf/lockfree/lock_free_cuckoo_filter.hpp"
#include "ccf/mapped_cuckoo_filter.hpp"
#include "ccf/scalable_bloom_filter.hpp"
#include "ccf/tables/cuckoo_map.hpp"

namespace py = pybind11;

namespace {

// A batch insert or update() that found the filter full.
class FullError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- keys ---------------------------------------------------------------------------------

// A key as the library takes it. Integers in [-2^63, 2^64) are taken modulo 2^64, so that an
// int64 array and the same Python ints are the same keys. A string_view points into the Python
// object, which the caller keeps alive.
using Key = std::variant<std::uint64_t, std::string_view>;

// An int key modulo 2^64 (`object` is an int): one pass over its digits and a look at its
// length, no exception set; ValueError outside [-2^63, 2^64). Of the 64-bit-long ints, the
// mask has bit 63 set for those in [2^63, 2^64) and for -2^63, clear for those below -2^63.
std::uint64_t int_key(PyObject* object) {
  const std::uint64_t value = PyLong_AsUnsignedLongLongMask(object);
  const auto bits = _PyLong_NumBits(object);
  if (bits < 64 || (bits == 64 && value >> 63 != 0)) return value;
  throw py::value_error("integer keys must be in [-2**63, 2**64)");
}

Key key_of(py::handle key) {
  PyObject* const object = key.ptr();
  if (PyLong_Check(object)) return int_key(object);
  if (PyBytes_Check(object)) {
    return std::string_view(PyBytes_AS_STRING(object),
                            static_cast<std::size_t>(PyBytes_GET_SIZE(object)));
  }
  if (PyUnicode_Check(object)) {
    Py_ssize_t size = 0;
    const char* const utf8 = PyUnicode_AsUTF8AndSize(object, &size);
    if (utf8 == nullptr) throw py::error_already_set();
    return std::string_view(utf8, static_cast<std::size_t>(size));
  }
  if (PyIndex_Check(object)) {  // numpy integer scalars and other __index__ types
    const py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(object));
    if (!index) throw py::error_already_set();
    return key_of(index);
  }
  throw py::type_error(std::string("keys are int, bytes or str, not ") + Py_TYPE(object)->tp_name);
}

template <class F>
decltype(auto) with_key(py::handle key, F&& f) {
  if (PyLong_CheckExact(key.ptr())) return f(int_key(key.ptr()));  // the common key, no variant
  return std::visit(std::forward<F>(f), key_of(key));
}

// A batch of keys: a 1-D array of uint64 (int64 and the other integer types converted), or of
// byte strings (fixed-width 'S', whose trailing NULs numpy strips, as it does when it hands out
// an element; 'U' arrays are encoded to UTF-8 first), or, for anything else, the keys of an
// iterable converted one by one.
class Batch {
 public:
  explicit Batch(py::handle keys) {
    py::module_ numpy = py::module_::import("numpy");
    py::object array =
        py::isinstance<py::array>(keys) ? py::reinterpret_borrow<py::object>(keys) : py::object();
    if (!array) {
      py::list items(py::reinterpret_borrow<py::object>(
          keys));  // any iterable: ints become a uint64 array, others views
      if (std::all_of(items.begin(), items.end(),
                      [](py::handle k) { return PyLong_Check(k.ptr()); })) {
        std::vector<std::uint64_t>& ints = ints_.emplace();
        ints.reserve(items.size());
        for (py::handle k : items) ints.push_back(int_key(k.ptr()));
        size_ = ints.size();
        return;
      }
      held_ = items;
      std::vector<std::string_view>& views = views_.emplace();
      views.reserve(items.size());
      for (py::handle k : items) {
        const Key key = key_of(k);
        const auto* const bytes = std::get_if<std::string_view>(&key);
        if (bytes == nullptr) throw py::type_error("a batch mixes int keys with bytes or str keys");
        views.push_back(*bytes);
      }
      size_ = views.size();
      return;
    }
    const py::dtype dtype = py::reinterpret_borrow<py::array>(array).dtype();
    if (py::reinterpret_borrow<py::array>(array).ndim() != 1) {
      throw py::value_error("a batch of keys is a 1-D array");
    }
    const char kind = dtype.kind();
    if (kind == 'U') {
      array = numpy.attr("char").attr("encode")(array, "utf-8");
    } else if (kind == 'u' || kind == 'i' || kind == 'b') {
      if (dtype.itemsize() != 8 || kind == 'b') array = array.attr("astype")(numpy.attr("uint64"));
    } else if (kind != 'S') {
      throw py::type_error("a key array holds integers or fixed-width bytes, not dtype " +
                           py::repr(dtype).cast<std::string>());
    }
    held_ = numpy.attr("ascontiguousarray")(array);  // no copy when already contiguous
    const auto contiguous = py::reinterpret_borrow<py::array>(held_);
    size_ = static_cast<std::size_t>(contiguous.shape(0));
    if (contiguous.dtype().kind() != 'S') {
      words_ = static_cast<const std::uint64_t*>(contiguous.data());
      return;
    }
    const auto width = static_cast<std::size_t>(contiguous.itemsize());
    const char* const base = static_cast<const char*>(contiguous.data());
    std::vector<std::string_view>& views = views_.emplace();
    views.reserve(size_);
    for (std::size_t i = 0; i < size_; ++i) {
      std::string_view key(base + i * width, width);
      while (!key.empty() && key.back() == '\0') key.remove_suffix(1);
      views.push_back(key);
    }
  }

  std::size_t size() const noexcept { return size_; }

  // f(std::span<const uint64_t>) or f(std::span<const std::string_view>).
  template <class F>
  decltype(auto) visit(F&& f) const {
    if (views_) return f(std::span<const std::string_view>(*views_));
    if (ints_) return f(std::span<const std::uint64_t>(*ints_));
    return f(std::span<const std::uint64_t>(words_, size_));
  }

 private:
  py::object held_;  // what the views and words_ point into
  const std::uint64_t* words_ = nullptr;
  std::optional<std::vector<std::uint64_t>> ints_;
  std::optional<std::vector<std::string_view>> views_;
  std::size_t size_ = 0;
};

// ---- the lock between Python threads (see the top of the file) ----------------------------

enum class Sharing { kSequential, kConcurrent };

template <class Impl, Sharing S>
class Shared {
 public:
  static constexpr Sharing kSharing = S;
  using impl_type = Impl;

  template <class... Args>
  explicit Shared(Args&&... args) : impl_(std::forward<Args>(args)...) {}

  // Single-item calls, GIL held. A sequential object needs its lock only while a batch call
  // runs without the GIL: batches_ counts those, and changes only under the GIL.
  template <class F>
  decltype(auto) read(F&& f) const {
    if constexpr (S == Sharing::kSequential) {
      if (batches_ != 0) {
        const std::shared_lock lock(guard_);
        return f(impl_);
      }
    }
    return f(impl_);
  }
  template <class F>
  decltype(auto) write(F&& f) {
    if constexpr (S == Sharing::kSequential) {
      if (batches_ != 0) {
        const std::unique_lock lock(guard_);
        return f(impl_);
      }
    }
    return f(impl_);
  }
  // Batch calls: counted while the GIL is held, then the GIL released, then the lock taken (and
  // undone in reverse order).
  template <class F>
  decltype(auto) batch_read(F&& f) const {
    const Running running(batches_);
    const py::gil_scoped_release nogil;
    const std::shared_lock lock(guard_);
    return f(impl_);
  }
  template <class F>
  decltype(auto) batch_write(F&& f) {
    const Running running(batches_);
    const py::gil_scoped_release nogil;
    if constexpr (S == Sharing::kSequential) {
      const std::unique_lock lock(guard_);
      return f(impl_);
    } else {
      const std::shared_lock lock(guard_);
      return f(impl_);
    }
  }
  // save, clear, pickling: alone, GIL held.
  template <class F>
  decltype(auto) alone(F&& f) const {
    const std::unique_lock lock(guard_);
    return f(impl_);
  }
  template <class F>
  decltype(auto) alone(F&& f) {
    const std::unique_lock lock(guard_);
    return f(impl_);
  }

 private:
  // Counts a batch call for as long as it runs (constructed and destroyed under the GIL).
  struct Running {
    explicit Running(int& batches) : batches_(batches) { ++batches_; }
    ~Running() { --batches_; }
    Running(const Running&) = delete;
    Running& operator=(const Running&) = delete;
    int& batches_;
  };

  Impl impl_;
  mutable std::shared_mutex guard_;
  mutable int batches_ = 0;  // batch calls running; read and written with the GIL held only
};

// ---- filters of a shape chosen at run time -------------------------------------------------

template <class... Filters>
class AnyShape {
 public:
  // Builds the filter with make(std::type_identity<Filter>{}) -> std::unique_ptr<Filter> for the
  // Filter of this shape; std::invalid_argument naming the supported shapes if none is.
  template <class Make>
  AnyShape(unsigned fp_bits, unsigned slots, bool semi_sorted, Make&& make)
      : filter_(select<0>(fp_bits, slots, semi_sorted, make)) {}

  // Reads a file of any shape these filters take (the header picks it); FormatError otherwise.
  static AnyShape load(std::istream& in) {
    const std::istream::pos_type start = in.tellg();
    const ccf::detail::FilterHeader h =
        ccf::detail::HeaderCodec::read(in, ccf::detail::FileVersions::kOneTableOrLevels);
    in.seekg(start);
    try {
      return AnyShape(h.fp_bits, h.slots, h.layout == ccf::detail::TableLayout::kSemiSorted,
                      [&](auto tag) { return decltype(tag)::type::load(in); });
    } catch (const std::invalid_argument& unsupported) {
      throw ccf::FormatError(std::string("unsupported filter shape in file: ") +
                             unsupported.what());
    }
  }

  template <class F>
  decltype(auto) visit(F&& f) {
    return std::visit([&](auto& filter) -> decltype(auto) { return f(*filter); }, filter_);
  }
  template <class F>
  decltype(auto) visit(F&& f) const {
    return std::visit(
        [&](const auto& filter) -> decltype(auto) { return f(std::as_const(*filter)); }, filter_);
  }

  static std::string supported() {
    std::string list;
    ((list += (list.empty() ? "" : ", ") + std::to_string(Filters::kFpBits) + "-bit/" +
              std::to_string(Filters::kSlots) + (is_semi_sorted<Filters>() ? " semi-sorted" : "")),
     ...);
    return list;
  }

 private:
  using Variant = std::variant<std::unique_ptr<Filters>...>;

  template <class Filter>
  static constexpr bool is_semi_sorted() {
    if constexpr (requires { Filter::table_type::kLayout; }) {
      return Filter::table_type::kLayout == std::string_view("semi-sorted");
    } else {
      return false;
    }
  }

  template <std::size_t I, class Make>
  static Variant select(unsigned fp_bits, unsigned slots, bool semi_sorted, Make& make) {
    if constexpr (I == sizeof...(Filters)) {
      throw std::invalid_argument("unsupported shape: " + std::to_string(fp_bits) +
                                  "-bit fingerprints, " + std::to_string(slots) + " slots/bucket" +
                                  (semi_sorted ? ", semi-sorted" : "") +
                                  " (supported fp_bits/bucket_size: " + supported() + ")");
    } else {
      using Filter = std::tuple_element_t<I, std::tuple<Filters...>>;
      if (Filter::kFpBits == fp_bits && Filter::kSlots == slots &&
          is_semi_sorted<Filter>() == semi_sorted) {
        return Variant(std::in_place_index<I>, make(std::type_identity<Filter>{}));
      }
      return select<I + 1>(fp_bits, slots, semi_sorted, make);
    }
  }

  Variant filter_;
};

template <class Table>
using Seq = ccf::CuckooFilter<Table>;
template <unsigned F>
using SeqPacked = std::tuple<Seq<ccf::PackedTable<F, 2>>, Seq<ccf::PackedTable<F, 4>>,
                             Seq<ccf::PackedTable<F, 8>>>;
template <class... Tuples>
using any_of_tuples = decltype(std::tuple_cat(std::declval<Tuples>()...));
template <class Tuple>
struct any_shape_of;
template <class... Filters>
struct any_shape_of<std::tuple<Filters...>> {
  using type = AnyShape<Filters...>;
};

using AnySequential = typename any_shape_of<
    any_of_tuples<SeqPacked<4>, SeqPacked<8>, SeqPacked<12>, SeqPacked<16>, SeqPacked<32>,
                  std::tuple<Seq<ccf::SemiSortedTable<8>>, Seq<ccf::SemiSortedTable<12>>,
                             Seq<ccf::SemiSortedTable<16>>>>>::type;
using AnyStriped = AnyShape<ccf::StripedCuckooFilter<8, 4>, ccf::StripedCuckooFilter<12, 4>,
                            ccf::StripedCuckooFilter<16, 4>>;
using AnyLockFree = AnyShape<ccf::LockFreeCuckooFilter<4>, ccf::LockFreeCuckooFilter<8>,
                             ccf::LockFreeCuckooFilter<12>>;

// The smallest fingerprint width the filters take whose false-positive bound at full load,
// 2b / 2^F, is at most `fpr`.
template <class Any>
unsigned fp_bits_for(double fpr, unsigned slots, const std::vector<unsigned>& widths) {
  if (!(fpr > 0 && fpr < 1)) throw py::value_error("fpr must be in (0, 1)");
  for (const unsigned bits : widths) {
    if (2.0 * slots / std::ldexp(1.0, static_cast<int>(bits)) <= fpr) return bits;
  }
  throw py::value_error("fpr " + std::to_string(fpr) + " needs more fingerprint bits than " +
                        std::to_string(widths.back()) + " (supported: " + Any::supported() + ")");
}

// The C++ filter type behind Impl (AnyShape's first alternative: they all offer the same).
template <class Impl>
struct filter_of {
  using type = Impl;
};
template <class... Filters>
struct filter_of<AnyShape<Filters...>> {
  using type = std::tuple_element_t<0, std::tuple<Filters...>>;
};

// ---- operations every filter family shares, whatever its C++ type can do ---------------------

template <class Filter, class K>
std::size_t insert_many(Filter& f, std::span<const K> keys) {
  if constexpr (requires { f.insert_many(keys); }) {
    return f.insert_many(keys);
  } else {
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (f.insert(keys[i]) != ccf::Status::kOk) return i;
    }
    return keys.size();
  }
}

template <class Filter, class K>
std::size_t contains_many(const Filter& f, std::span<const K> keys, std::span<bool> out) {
  if constexpr (requires { f.contains_many(keys, out); }) {
    return f.contains_many(keys, out);
  } else {
    std::size_t hits = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) hits += out[i] = f.contains(keys[i]);
    return hits;
  }
}

// Concurrent filters split a large lookup batch over the cores: each part at least this long.
constexpr std::size_t kParallelPart = std::size_t{1} << 18;

template <Sharing S, class Filter, class K>
void contains_many_parallel(const Filter& f, std::span<const K> keys, std::span<bool> out) {
  const std::size_t parts =
      S == Sharing::kConcurrent
          ? std::clamp<std::size_t>(keys.size() / kParallelPart, 1,
                                    std::max(1u, std::thread::hardware_concurrency()))
          : 1;
  const std::size_t step = (keys.size() + parts - 1) / parts;
  std::vector<std::thread> helpers;
  for (std::size_t p = 1; p < parts; ++p) {
    const std::size_t begin = std::min(p * step, keys.size());
    const std::size_t n = std::min(step, keys.size() - begin);
    helpers.emplace_back([&f, part = keys.subspan(begin, n), to = out.subspan(begin, n)] {
      contains_many(f, part, to);
    });
  }
  contains_many(f, keys.first(std::min(step, keys.size())), out.first(std::min(step, keys.size())));
  for (std::thread& helper : helpers) helper.join();
}

// The whole payload as a stream: a filter read from bytes without copying them.
template <class Read>
auto from_buffer(py::buffer data, Read&& read) {
  const py::buffer_info info = data.request();
  ccf::detail::MemoryStreambuf buffer(
      std::span<const std::byte>(static_cast<const std::byte*>(info.ptr),
                                 static_cast<std::size_t>(info.size * info.itemsize)));
  std::istream in(&buffer);
  return read(in);
}

[[noreturn]] void raise_os_error(const std::string& path) {
  PyErr_SetFromErrnoWithFilename(PyExc_OSError, path.c_str());
  throw py::error_already_set();
}

std::ifstream open_input(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) raise_os_error(path);
  return in;
}

// ---- the Python classes ----------------------------------------------------------------------

// Runs f() for a CPython slot or METH_O function: a C++ or Python exception becomes the Python
// error it stands for, and `failed` is returned.
template <class R, class F>
R guarded(R failed, F&& f) noexcept {
  try {
    return f();
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
  return failed;
}

// The C++ object of a pybind11 instance of W (or of a Python subclass): pybind11's simple
// layout (one C++ base, the case of every class here) read in place, without its lookup call.
template <class W>
W& self_of(PyObject* self) {
  auto* const instance = reinterpret_cast<py::detail::instance*>(self);
  void* const value = instance->simple_layout ? instance->simple_value_holder[0]
                                              : instance->get_value_and_holder().value_ptr();
  if (value == nullptr)
    throw py::type_error("the filter was not initialized (__init__ not called)");
  return *static_cast<W*>(value);
}

// `x in f` and f.add(x) straight from CPython's sq_contains slot and a METH_O method:
// pybind11's dispatcher costs several hundred ns a call on this machine, many times the
// filter's own work (docs/python.md, figures). The same calls as the pybind11 methods.
template <class W, class Visit>
struct FastCalls {
  using Impl = typename W::impl_type;

  static int contains(PyObject* self, PyObject* key) {
    return guarded(-1, [&] {
      return self_of<W>(self).read([&](const Impl& impl) {
        return with_key(key, [&](auto k) {
          return Visit{}(impl, [&](const auto& f) { return f.contains(k) ? 1 : 0; });
        });
      });
    });
  }
  static PyObject* add(PyObject* self, PyObject* key) {
    return guarded<PyObject*>(nullptr, [&] {
      const bool stored = self_of<W>(self).write([&](Impl& impl) {
        return with_key(key, [&](auto k) {
          return Visit{}(impl, [&](auto& f) { return f.insert(k) == ccf::Status::kOk; });
        });
      });
      return PyBool_FromLong(stored);
    });
  }

  static void install(py::class_<W>& cls) {
    auto* const type = reinterpret_cast<PyTypeObject*>(cls.ptr());
    type->tp_as_sequence->sq_contains = &contains;
    static const std::string doc = py::str(cls.attr("add").attr("__doc__")).cast<std::string>();
    static PyMethodDef add_def{"add", &add, METH_O, doc.c_str()};
    PyObject* const method = PyDescr_NewMethod(type, &add_def);
    if (method == nullptr) throw py::error_already_set();
    cls.attr("add") = py::reinterpret_steal<py::object>(method);
    PyType_Modified(type);
  }
};

// The methods of every filter class. W is a Shared<Impl, S>; calls reach the filter through
// W's lock and `visit`, which hands the C++ filter to a generic lambda (AnyShape::visit, or the
// object itself for a single type).
template <class W, class Visit>
void bind_filter_methods(py::class_<W>& cls, Visit visit) {
  using Impl = typename W::impl_type;
  constexpr Sharing S = W::kSharing;

  cls.def(
         "__contains__",
         [visit](const W& w, py::handle key) {
           return w.read([&](const Impl& impl) {
             return with_key(key, [&](auto k) {
               return visit(impl, [&](const auto& f) { return static_cast<bool>(f.contains(k)); });
             });
           });
         },
         py::arg("key"),
         "True if the key may be in the filter: always for an added key, and for "
         "others at about the false-positive rate.")
      .def(
          "add",
          [visit](W& w, py::handle key) {
            return w.write([&](Impl& impl) {
              return with_key(key, [&](auto k) {
                return visit(impl, [&](auto& f) { return f.insert(k) == ccf::Status::kOk; });
              });
            });
          },
          py::arg("key"),
          "Adds the key. Returns True when stored, False when the filter is full (then nothing "
          "changed and no earlier item is lost).")
      .def(
          "add_many",
          [visit](W& w, py::handle keys) {
            const Batch batch(keys);
            return w.batch_write([&](Impl& impl) {
              return batch.visit([&](auto span) {
                return visit(impl, [&](auto& f) { return insert_many(f, span); });
              });
            });
          },
          py::arg("keys"),
          "Adds a batch of keys (a NumPy array of integers or fixed-width bytes, or any "
          "iterable) through the library's prefetching pipeline, without the GIL. Returns how "
          "many leading keys were stored: len(keys) unless the filter filled up, and then the "
          "keys after those are not stored.")
      .def(
          "update",
          [visit](W& w, py::handle keys) {
            const Batch batch(keys);
            const std::size_t stored = w.batch_write([&](Impl& impl) {
              return batch.visit([&](auto span) {
                return visit(impl, [&](auto& f) { return insert_many(f, span); });
              });
            });
            if (stored < batch.size()) {
              throw FullError("the filter is full: " + std::to_string(stored) + " of " +
                              std::to_string(batch.size()) + " keys stored");
            }
          },
          py::arg("keys"),
          "Adds every key of an iterable or array (as add_many); raises ccf.FullError when the "
          "filter fills up (the keys before the first that found no room are stored).")
      .def(
          "contains_many",
          [visit](const W& w, py::handle keys) {
            const Batch batch(keys);
            py::array_t<bool> out(static_cast<py::ssize_t>(batch.size()));
            const std::span<bool> to(out.mutable_data(), batch.size());
            w.batch_read([&](const Impl& impl) {
              batch.visit([&](auto span) {
                visit(impl, [&](const auto& f) { contains_many_parallel<S>(f, span, to); });
              });
            });
            return out;
          },
          py::arg("keys"),
          "Looks up a batch of keys (as add_many takes them) without the GIL; returns a "
          "numpy.ndarray of bool, True where the key may be in the filter.")
      .def(
          "__len__",
          [visit](const W& w) {
            return w.read([&](const Impl& impl) {
              return visit(impl, [](const auto& f) { return static_cast<std::size_t>(f.size()); });
            });
          },
          "Items stored (each add that returned True, less removals).")
      .def_property_readonly(
          "capacity",
          [visit](const W& w) {
            return w.read([&](const Impl& impl) {
              return visit(impl,
                           [](const auto& f) { return static_cast<std::size_t>(f.capacity()); });
            });
          },
          "Items the filter was sized for (cuckoo filters: slots in the table).")
      .def_property_readonly(
          "memory_bytes",
          [visit](const W& w) {
            return w.read([&](const Impl& impl) {
              return visit(
                  impl, [](const auto& f) { return static_cast<std::size_t>(f.memory_bytes()); });
            });
          },
          "Bytes of memory the filter takes.");

  using Filter = typename filter_of<Impl>::type;
  FastCalls<W, Visit>::install(cls);

  if constexpr (requires(Filter & f) { f.erase(std::uint64_t{0}); }) {
    const auto erase = [visit](W& w, py::handle key) {
      return w.write([&](Impl& impl) {
        return with_key(key, [&](auto k) {
          return visit(impl, [&](auto& f) { return f.erase(k) == ccf::Status::kOk; });
        });
      });
    };
    cls.def(
           "discard", [erase](W& w, py::handle key) { erase(w, key); }, py::arg("key"),
           "Removes one copy of an added key, if the filter has it. Only discard keys that were "
           "added: removing a key never added may remove another key's copy.")
        .def(
            "remove",
            [erase](W& w, py::handle key) {
              if (!erase(w, key)) throw py::key_error(py::repr(key).cast<std::string>());
            },
            py::arg("key"), "As discard, but raises KeyError when the filter has no copy.");
  }

  if constexpr (requires(const Filter& f, std::ostream& out) { f.save(out); }) {
    const auto save = [visit](const W& w, std::ostream& out) {
      w.alone([&](const Impl& impl) { visit(impl, [&](const auto& f) { f.save(out); }); });
    };
    const auto to_bytes = [save](const W& w) {
      std::ostringstream out;
      save(w, out);
      return py::bytes(std::move(out).str());
    };
    const auto from_bytes = [](py::buffer data) {
      return std::make_unique<W>(
          from_buffer(data, [](std::istream& in) { return Impl::load(in); }));
    };
    cls.def(
           "save",
           [save](const W& w, const std::string& path) {
             std::ofstream out(path, std::ios::binary | std::ios::trunc);
             if (!out) raise_os_error(path);
             save(w, out);
             out.close();
             if (!out) raise_os_error(path);
           },
           py::arg("path"),
           "Writes the filter to a file in the library's format (docs/file-format.md), which "
           "C++ programs (and, for cuckoo filters, the ccf tool) read. Not concurrent with "
           "writers: waits for batch calls in flight.")
        .def_static(
            "load",
            [](const std::string& path) {
              std::ifstream in = open_input(path);
              return std::make_unique<W>(Impl::load(in));
            },
            py::arg("path"),
            "Reads a filter file (any shape this class takes). Raises ccf.FormatError, naming "
            "what is wrong, for a foreign, truncated or corrupted file.")
        .def("to_bytes", to_bytes, "The filter in the file format, as bytes.")
        .def_static("from_bytes", from_bytes, py::arg("data"),
                    "The filter that to_bytes() gave (any bytes-like object). Raises "
                    "ccf.FormatError for bytes that are not a filter.")
        .def(py::pickle([to_bytes](const W& w) { return py::make_tuple(to_bytes(w)); },
                        [from_bytes](const py::tuple& state) {
                          if (state.size() != 1) throw ccf::FormatError("bad pickled filter state");
                          return from_bytes(state[0].cast<py::buffer>());
                        }));
  }

  if constexpr (requires(Filter & f) { f.clear(); }) {
    cls.def(
        "clear",
        [visit](W& w) { w.alone([&](Impl& impl) { visit(impl, [](auto& f) { f.clear(); }); }); },
        "Removes every item. Not concurrent with writers: waits for batch calls in flight.");
  }
}

// What AnyShape's visit and a plain object's look like to bind_filter_methods.
constexpr auto visit_any = [](auto& any, auto&& f) -> decltype(auto) { return any.visit(f); };
constexpr auto visit_self = [](auto& filter, auto&& f) -> decltype(auto) { return f(filter); };

ccf::FilterOptions filter_options(std::optional<std::uint64_t> seed, double max_load) {
  ccf::FilterOptions options;
  if (seed) options.seed = *seed;
  options.max_load = max_load;
  return options;
}

constexpr const char* kSequentialNote =
    "\n\nThread safety: sequential. Calls from several Python threads are safe -- an internal "
    "lock serializes them (batch calls release the GIL, not the lock) -- but never run in "
    "parallel; the Concurrent* classes do.";

template <class Impl, Sharing S>
void bind_cuckoo(py::module_& m, const char* name, const std::string& doc, unsigned default_bits,
                 const std::vector<unsigned>& widths, bool takes_semi_sorted) {
  using W = Shared<Impl, S>;
  py::class_<W> cls(m, name, doc.c_str());
  cls.def(py::init([default_bits, widths, takes_semi_sorted](
                       std::size_t capacity, std::optional<double> fpr,
                       std::optional<unsigned> fp_bits, unsigned bucket_size, bool semi_sorted,
                       std::optional<std::uint64_t> seed, double max_load) {
            if (semi_sorted && !takes_semi_sorted)
              throw py::value_error("semi_sorted is not supported here");
            if (fpr && fp_bits) throw py::value_error("give fpr or fp_bits, not both");
            const unsigned bits = fp_bits ? *fp_bits
                                  : fpr   ? fp_bits_for<Impl>(*fpr, bucket_size, widths)
                                          : default_bits;
            const ccf::FilterOptions options = filter_options(seed, max_load);
            return std::make_unique<W>(bits, bucket_size, semi_sorted, [&](auto tag) {
              using Filter = typename decltype(tag)::type;
              return std::make_unique<Filter>(capacity, options);
            });
          }),
          py::arg("capacity"), py::arg("fpr") = py::none(), py::kw_only(),
          py::arg("fp_bits") = py::none(), py::arg("bucket_size") = 4,
          py::arg("semi_sorted") = false, py::arg("seed") = py::none(), py::arg("max_load") = 0.0,
          "A filter for `capacity` items. Shape by keyword (fp_bits, bucket_size, semi_sorted) or "
          "by a target false-positive rate `fpr` (picks the smallest fingerprint width whose "
          "bound 2*bucket_size/2**fp_bits is at most fpr). Raises ValueError for an unsupported "
          "shape or bad capacity, with the library's message.");
  bind_filter_methods(cls, visit_any);
  cls.def_property_readonly(
         "fp_bits",
         [](const W& w) {
           return w.read([](const Impl& impl) {
             return impl.visit(
                 [](const auto& f) { return std::remove_cvref_t<decltype(f)>::kFpBits; });
           });
         },
         "Fingerprint bits (of the first level, for LockFreeCuckooFilter).")
      .def_property_readonly(
          "shape",
          [](const W& w) {
            return w.read([](const Impl& impl) {
              return impl.visit([](const auto& f) { return f.shape(); });
            });
          },
          "The table's shape, as the library names it.")
      .def("__repr__", [name](const W& w) {
        return w.read([&](const Impl& impl) {
          return impl.visit([&](const auto& f) {
            return "<ccf." + std::string(name) + " " + f.shape() + ": " + std::to_string(f.size()) +
                   " items, " + std::to_string(f.capacity()) + " slots>";
          });
        });
      });
}

template <class Impl, Sharing S>
void bind_bloom(py::module_& m, const char* name, const std::string& doc) {
  using W = Shared<Impl, S>;
  py::class_<W> cls(m, name, doc.c_str());
  cls.def(py::init([](std::size_t capacity, std::optional<double> fpr,
                      std::optional<double> bits_per_item, std::optional<std::uint64_t> seed) {
            if (fpr && bits_per_item) throw py::value_error("give fpr or bits_per_item, not both");
            const std::uint64_t s = seed.value_or(ccf::kDefaultSeed);
            if (fpr) return std::make_unique<W>(Impl::for_fpr(capacity, *fpr, s));
            return std::make_unique<W>(capacity, bits_per_item.value_or(10.0), s);
          }),
          py::arg("capacity"), py::arg("fpr") = py::none(), py::kw_only(),
          py::arg("bits_per_item") = py::none(), py::arg("seed") = py::none(),
          "A filter for `capacity` items at `bits_per_item` bits each (default 10), or sized for "
          "the false-positive rate `fpr` at capacity. Raises ValueError for bad arguments, with "
          "the library's message. Never full: past capacity it answers 'maybe' more often.");
  bind_filter_methods(cls, visit_self);
  cls.def_property_readonly(
         "hash_count",
         [](const W& w) { return w.read([](const Impl& f) { return f.hash_count(); }); },
         "Hash functions (bits or counters set per key).")
      .def_property_readonly(
          "expected_fpr",
          [](const W& w) { return w.read([](const Impl& f) { return f.expected_fpr(); }); },
          "The theoretical false-positive rate at the current size.");
}

constexpr const char* kConcurrentBloomNote =
    "\n\nThread safety: concurrent. Any Python threads may add, look up (and, counting, discard) "
    "at once; batch calls release the GIL and run in parallel (a large contains_many also "
    "splits over the cores). Files are the sequential filter's: either class loads the other's. "
    "save, to_bytes, pickling and clear wait for batch calls in flight.";

// ScalableBloomFilter as bind_filter_methods sees a filter: insert() is kOk when the key is in
// the filter afterwards (added now, or already testing present), kFull when a non-scaling
// filter is full; a sub-filter that cannot be allocated is a MemoryError.
class Scalable {
 public:
  explicit Scalable(const ccf::ScalableBloomOptions& options) : filter_(options) {}
  explicit Scalable(ccf::ScalableBloomFilter&& filter) : filter_(std::move(filter)) {}

  template <class K>
  ccf::Status insert(K key) {
    switch (filter_.add(key)) {
      case ccf::BloomAddResult::kAdded:
      case ccf::BloomAddResult::kPresent:
        return ccf::Status::kOk;
      case ccf::BloomAddResult::kFull:
        return ccf::Status::kFull;
      case ccf::BloomAddResult::kNoMemory:
        break;
    }
    throw std::bad_alloc();
  }
  template <class K>
  bool contains(K key) const noexcept {
    return filter_.contains(key);
  }
  template <class K>
  std::size_t contains_many(std::span<const K> keys, std::span<bool> out) const {
    filter_.contains_many(keys, out);
    return static_cast<std::size_t>(std::count(out.begin(), out.begin() + keys.size(), true));
  }
  std::uint64_t size() const noexcept { return filter_.size(); }
  std::uint64_t capacity() const noexcept { return filter_.capacity(); }
  std::size_t memory_bytes() const noexcept { return filter_.memory_bytes(); }
  void save(std::ostream& out) const { filter_.save(out); }
  static Scalable load(std::istream& in) { return Scalable(ccf::ScalableBloomFilter::load(in)); }
  const ccf::ScalableBloomFilter& filter() const noexcept { return filter_; }

 private:
  ccf::ScalableBloomFilter filter_;
};

void bind_scalable(py::module_& m) {
  using W = Shared<Scalable, Sharing::kConcurrent>;
  py::class_<W> cls(
      m, "ScalableBloomFilter",
      "A Bloom filter that grows (Scalable Bloom Filters, as RedisBloom's BF.*): a chain of "
      "concurrent Bloom filters (blocked; standard where a rate is below what the blocked layout "
      "reaches), the newest taking new keys, each `expansion` times "
      "the last's capacity at half its error, so the whole filter's false-positive rate stays "
      "below `error_rate` however many keys it takes. expansion=0: one filter that refuses "
      "keys past `capacity` (add returns False, update raises ccf.FullError). No deletion."
      "\n\nThread safety: concurrent. Any Python threads may add and look up at once; batch "
      "calls release the GIL and run in parallel (a large contains_many also splits over the "
      "cores); growth takes a lock only in the add that finds the newest filter full. save, "
      "to_bytes and pickling wait for batch calls in flight.");
  cls.def(py::init([](std::uint64_t capacity, double error_rate, std::uint32_t expansion) {
            return std::make_unique<W>(ccf::ScalableBloomOptions{capacity, error_rate, expansion});
          }),
          py::arg("capacity") = 100, py::arg("error_rate") = 0.01, py::arg("expansion") = 2,
          "A filter whose first sub-filter holds `capacity` keys, whose false-positive rate "
          "stays below `error_rate`, and each of whose new sub-filters holds `expansion` times "
          "the last's keys (0: never grows). Raises ValueError for bad arguments, with the "
          "library's message.");
  bind_filter_methods(cls, visit_self);
  const auto get = [](auto f) {
    return [f](const W& w) { return w.read([&](const Scalable& s) { return f(s.filter()); }); };
  };
  cls.def_property_readonly("error_rate", get([](const ccf::ScalableBloomFilter& f) {
                              return f.options().error_rate;
                            }),
                            "The bound on the false-positive rate the filter was made with.")
      .def_property_readonly(
          "expansion", get([](const ccf::ScalableBloomFilter& f) { return f.options().expansion; }),
          "Growth factor of the sub-filters' capacities (0: the filter does not grow).")
      .def_property_readonly(
          "filter_count", get([](const ccf::ScalableBloomFilter& f) { return f.filter_count(); }),
          "Sub-filters in the chain (1 until the first fills).")
      .def_property_readonly(
          "expected_fpr", get([](const ccf::ScalableBloomFilter& f) { return f.expected_fpr(); }),
          "The theoretical false-positive rate at the current fill (all sub-filters).");
}

// A CuckooMap key or value: a 64-bit signed integer.
std::int64_t map_int(py::handle value) {
  int overflow = 0;
  const long long v = PyLong_Check(value.ptr())
                          ? PyLong_AsLongLongAndOverflow(value.ptr(), &overflow)
                          : (overflow = 2, 0);
  if (overflow != 0) {
    throw py::value_error("CuckooMap keys and values are ints in [-2**63, 2**63), not " +
                          py::repr(value).cast<std::string>());
  }
  return v;
}

void bind_map(py::module_& m) {
  using Map = ccf::CuckooMap<std::int64_t, std::int64_t>;
  using W = Shared<Map, Sharing::kConcurrent>;
  py::class_<W>(m, "CuckooMap",
                "A concurrent hash map from int to int (64-bit signed) in the library's "
                "CuckooMap: lookups that store nothing, striped locks for writers, growth.\n\n"
                "Thread safety: concurrent; any Python threads may call any method at once.")
      .def(py::init([](std::size_t capacity, double growth) {
             return std::make_unique<W>(capacity, Map::Growth{growth});
           }),
           py::arg("capacity") = 1024, py::arg("growth") = 2.0,
           "An empty map sized for `capacity` items. When it fills it grows to `growth` times "
           "its size: any factor in [1.125, 2]; less keeps its memory closer to a map sized "
           "for its items, for more copying while it grows (ValueError outside).")
      .def(
          "__getitem__",
          [](const W& w, py::handle key) {
            const auto found = w.read([&](const Map& map) { return map.find(map_int(key)); });
            if (!found) throw py::key_error(py::repr(key).cast<std::string>());
            return *found;
          },
          py::arg("key"), "The value of `key`; KeyError when absent.")
      .def(
          "get",
          [](const W& w, py::handle key, py::object fallback) -> py::object {
            const auto found = w.read([&](const Map& map) { return map.find(map_int(key)); });
            return found ? py::int_(*found) : fallback;
          },
          py::arg("key"), py::arg("default") = py::none(), "The value of `key`, or `default`.")
      .def(
          "__setitem__",
          [](W& w, py::handle key, py::handle value) {
            w.write([&](Map& map) { map.insert_or_assign(map_int(key), map_int(value)); });
          },
          py::arg("key"), py::arg("value"), "Sets `key` to `value`.")
      .def(
          "insert",
          [](W& w, py::handle key, py::handle value) {
            return w.write([&](Map& map) { return map.insert(map_int(key), map_int(value)); }) ==
                   ccf::Status::kOk;
          },
          py::arg("key"), py::arg("value"),
          "Adds `key` -> `value` unless the key is present; True when added.")
      .def(
          "__delitem__",
          [](W& w, py::handle key) {
            if (w.write([&](Map& map) { return map.erase(map_int(key)); }) != ccf::Status::kOk) {
              throw py::key_error(py::repr(key).cast<std::string>());
            }
          },
          py::arg("key"), "Removes `key`; KeyError when absent.")
      .def(
          "__contains__",
          [](const W& w, py::handle key) {
            return PyLong_Check(key.ptr()) &&
                   w.read([&](const Map& map) { return map.contains(map_int(key)); });
          },
          py::arg("key"), "True if `key` is in the map (exact: a map has no false positives).")
      .def(
          "__len__", [](const W& w) { return w.read([](const Map& map) { return map.size(); }); },
          "Items in the map.");
}

// The read-only view of a file mapped into memory (ccf.open(path, mmap=True)).
void bind_mapped(py::module_& m) {
  using W = Shared<ccf::MappedCuckooFilter, Sharing::kConcurrent>;
  using Impl = ccf::MappedCuckooFilter;
  py::class_<W> cls(m, "MappedCuckooFilter",
                    "A read-only cuckoo filter served from its file mapped into memory: opening "
                    "reads and checks only the 96-byte header, so a filter of any size opens "
                    "at once; lookups fault in the pages they touch. The payload checksum is not "
                    "verified at open (verify() does it, reading the whole file); lookups in a "
                    "corrupted payload stay inside the file. Packed layouts only (semi-sorted "
                    "files: load them).\n\nThread safety: read-only; any Python threads may call "
                    "any method at once.");
  cls.def(py::init([](const std::string& path) { return std::make_unique<W>(Impl::open(path)); }),
          py::arg("path"),
          "Maps the filter file at `path`. Raises ccf.FormatError for a file that is not a "
          "packed cuckoo filter or is too short for its payload, OSError if it cannot be read.");
  cls.def(
         "__contains__",
         [](const W& w, py::handle key) {
           return with_key(
               key, [&](auto k) { return w.read([&](const Impl& f) { return f.contains(k); }); });
         },
         py::arg("key"), "True if the key may be in the filter.")
      .def(
          "contains_many",
          [](const W& w, py::handle keys) {
            const Batch batch(keys);
            py::array_t<bool> out(static_cast<py::ssize_t>(batch.size()));
            const std::span<bool> to(out.mutable_data(), batch.size());
            w.batch_read([&](const Impl& f) {
              batch.visit(
                  [&](auto span) { contains_many_parallel<Sharing::kConcurrent>(f, span, to); });
            });
            return out;
          },
          py::arg("keys"), "Looks up a batch of keys without the GIL; numpy.ndarray of bool.")
      .def(
          "verify", [](const W& w) { w.batch_read([](const Impl& f) { f.verify(); }); },
          "Checks the payload checksum (reads the whole file); raises ccf.FormatError if it "
          "does not hold.")
      .def(
          "__len__", [](const W& w) { return w.read([](const Impl& f) { return f.size(); }); },
          "Items stored, as the file's header says.")
      .def_property_readonly(
          "capacity", [](const W& w) { return w.read([](const Impl& f) { return f.capacity(); }); },
          "Slots in the table.")
      .def_property_readonly(
          "fp_bits", [](const W& w) { return w.read([](const Impl& f) { return f.fp_bits(); }); },
          "Fingerprint bits.")
      .def_property_readonly(
          "shape", [](const W& w) { return w.read([](const Impl& f) { return f.shape(); }); },
          "The table's shape, as the library names it.")
      .def_property_readonly(
          "file_bytes",
          [](const W& w) { return w.read([](const Impl& f) { return f.file_bytes(); }); },
          "Size of the mapped file.");
}

}  // namespace

PYBIND11_MODULE(_ccf, m) {
  m.doc() = "Bindings of the ccf C++ library; import ccf, not this module.";
  py::register_exception<ccf::FormatError>(m, "FormatError", PyExc_ValueError);
  py::register_exception<FullError>(m, "FullError", PyExc_RuntimeError);
  // std::system_error (a file that cannot be opened or mapped; stream failures) -> OSError
  // with its errno, which Python turns into FileNotFoundError and the like.
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const std::system_error& e) {
      const py::tuple args = py::make_tuple(e.code().value(), e.what());
      PyErr_SetObject(PyExc_OSError, args.ptr());
    }
  });

  bind_cuckoo<AnySequential, Sharing::kSequential>(
      m, "CuckooFilter",
      std::string("The sequential cuckoo filter (CuckooFilter<PackedTable<F, b>> or "
                  "<SemiSortedTable<F>>): fp_bits 4, 8, 12, 16, 32 with bucket_size 2, 4, 8; "
                  "semi-sorted: fp_bits 8, 12, 16 with bucket_size 4. Deletes; fills to >= 95% "
                  "(b = 4) before add returns False.") +
          kSequentialNote,
      12, {4, 8, 12, 16, 32}, true);
  bind_cuckoo<AnyStriped, Sharing::kConcurrent>(
      m, "ConcurrentCuckooFilter",
      "The concurrent cuckoo filter (StripedCuckooFilter<F, 4>: striped seqlocks, lookups that "
      "store nothing), fp_bits 8, 12, 16, bucket_size 4. Its files are the sequential filter's."
      "\n\nThread safety: concurrent. Any Python threads may add, discard and look up at once; "
      "batch calls release the GIL and run in parallel (a large contains_many also splits over "
      "the cores). save, to_bytes, pickling and clear wait for batch calls in flight.",
      12, {8, 12, 16}, false);
  bind_cuckoo<AnyLockFree, Sharing::kConcurrent>(
      m, "LockFreeCuckooFilter",
      "The lock-free cuckoo filter (LockFreeCuckooFilter<F>, fp_bits 4, 8, 12, bucket_size 4): "
      "K-CAS moves, and growth by levels when full (up to 8 levels, 255x the first) with no "
      "false negatives. An ungrown filter's file is the sequential filter's; a grown one's only "
      "this class loads.\n\nThread safety: concurrent, lock-free, as ConcurrentCuckooFilter.",
      12, {4, 8, 12}, false);

  bind_bloom<ccf::BloomFilter, Sharing::kSequential>(
      m, "BloomFilter",
      std::string("The standard Bloom filter (k probes by double hashing). No deletion.") +
          kSequentialNote);
  bind_bloom<ccf::BlockedBloomFilter, Sharing::kSequential>(
      m, "BlockedBloomFilter",
      std::string("The cache-blocked Bloom filter: every key's bits in one 64-byte line (one "
                  "miss per call), at a somewhat higher false-positive rate. No deletion.") +
          kSequentialNote);
  bind_bloom<ccf::CountingBloomFilter, Sharing::kSequential>(
      m, "CountingBloomFilter",
      std::string("The counting Bloom filter (4-bit saturating counters): deletes, at 4x the "
                  "space for the same rate.") +
          kSequentialNote);

  bind_bloom<ccf::ConcurrentBloomFilter, Sharing::kConcurrent>(
      m, "ConcurrentBloomFilter",
      std::string("The standard Bloom filter for many threads: lookups are loads only, adds set "
                  "only the bits still clear (atomically). No deletion.") +
          kConcurrentBloomNote);
  bind_bloom<ccf::ConcurrentBlockedBloomFilter, Sharing::kConcurrent>(
      m, "ConcurrentBlockedBloomFilter",
      std::string("The cache-blocked Bloom filter for many threads (one 64-byte line per key). "
                  "No deletion.") +
          kConcurrentBloomNote);
  bind_bloom<ccf::ConcurrentCountingBloomFilter, Sharing::kConcurrent>(
      m, "ConcurrentCountingBloomFilter",
      std::string("The counting Bloom filter for many threads (each counter word updated by "
                  "compare-and-swap): deletes.") +
          kConcurrentBloomNote);
  bind_scalable(m);

  bind_map(m);
  bind_mapped(m);
}
