// Interop with an application's OpenGL objects: graphics applications that render frames and run
// tensor work (image filters, neural effects, inference) on them every frame, on the same GPU,
// without host round trips, stalls or side effects on their rendering.
//
// Contexts. Either adopt the application's context (Device::adopt_current: EGL OpenGL ES 3.1+,
// EGL desktop OpenGL 4.3+, or GLX), or open a device whose context shares objects with it
// (OpenOptions::share_context / share_display), typically on a compute thread beside the render
// thread. Names passed here (buffers, textures, fences) are objects of the application's share
// group. Headless devices from plain Device::open() share nothing with an application.
//
// GL types. This header includes no GL header: object names are `GLname` (GLuint, unsigned int),
// enums and barrier bits `GLenumValue` / `GLbits` (GLenum / GLbitfield, unsigned int), and
// fences `GLsyncHandle`, the same pointer type as GLsync in the Khronos headers (struct
// __GLsync*), so values convert without casts both ways.
//
// Barriers and fences: the hand-off contract (OpenGL ES 3.1 spec, 7.11 "Shader Memory Access"
// and 4.1 "Sync Objects"). Writes by shaders (SSBO and image stores, both sides) are incoherent:
// a glMemoryBarrier with the bits of the *consumer's* access must come after them in the
// writer's context, and a consumer in another context must wait on a fence made after that.
// Writes by other GL commands (draws into a framebuffer, glBufferSubData, copies, transform
// feedback) need no barrier within a context.
//  - app -> gltensor: call acquire() before gltensor reads (or overwrites) objects the
//    application wrote. It issues glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT |
//    GL_TEXTURE_FETCH_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT) (how gltensor's kernels
//    access wrapped buffers and textures) and, given the application's fence (glFenceSync then
//    glFlush in the application's context), queues glWaitSync on it in gltensor's context.
//  - gltensor -> app: call release() before the application uses objects gltensor wrote
//    (tensors' buffers, textures written by to_texture). It issues one glMemoryBarrier with
//    the bits of the application's use (default: all; kTextureReadBarrierBits for a texture
//    sampled, image-loaded or blitted next) plus those of gltensor's own pending hazards, then
//    a fence after all recorded work, flushed (glFlush). In the same context the application may use the
//    objects at once (GL orders the commands) and ask for no fence (then nothing is flushed); in
//    another context of the share group it glWaitSync()s (or glClientWaitSync()s) on the fence
//    first. The application owns returned fences (glDeleteSync, in any context of the group).
// The tested two-thread pattern (tests/interop/test_interop_threads.cpp): the render thread
// renders into texture A, makes fence F1 (glFenceSync + glFlush) and hands it over; the compute
// thread (a Device opened with share_context) calls acquire(dev, F1), from_texture(A), runs
// tensor ops, to_texture(B), F2 = release(dev) and hands F2 back; the render thread
// glWaitSync(F2)s, deletes both fences and draws with B. A texture or buffer written in one
// context is seen by another only where that context binds it again after the wait (GL's rule
// for shared objects): acquire() makes gltensor bind every object again.
//
// Per-call cost on adopted contexts. With AdoptOptions::restore_state (the default) each public
// call reads, with one glGet each, the bindings it changes and puts them back: a few glGets per
// op, which cost a round trip on threaded drivers (NVIDIA's __GL_THREADED_OPTIMIZATIONS). Inside
// a StateScope the reads and restores happen once for all the scope's calls, and with
// restore_state = false never.
//
// Errors: ValueError for a name that is not an object of the kind (or an unusable one: a
// mutable texture as an image on OpenGL ES), DTypeError for an unsupported texture format or
// dtype, ShapeError for shapes that do not match the object, LimitError past the device's SSBO
// size; all name the call, the object and the sizes.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gltensor/linalg.hpp"
#include "gltensor/nn_functional.hpp"
#include "gltensor/tensor.hpp"

struct __GLsync;  // GLsync in <GLES3/gl3.h> and <GL/glcorearb.h> is `typedef struct __GLsync* GLsync`

namespace gltensor {
namespace detail {
class Enter;
}

namespace interop {

using GLname = unsigned int;       ///< a GL object name (GLuint)
using GLenumValue = unsigned int;  ///< a GLenum value, e.g. GL_RGBA8
using GLbits = unsigned int;       ///< GLbitfield (glMemoryBarrier bits)
using GLsyncHandle = ::__GLsync*;  ///< GLsync

inline constexpr GLbits kAllBarrierBits = 0xFFFFFFFFu;  ///< GL_ALL_BARRIER_BITS
/// The bits for a texture gltensor wrote that the application reads next by sampling, image
/// loads or as a framebuffer attachment (blits, draws into it): GL_TEXTURE_FETCH_BARRIER_BIT |
/// GL_SHADER_IMAGE_ACCESS_BARRIER_BIT | GL_FRAMEBUFFER_BARRIER_BIT. A frame filter's release().
inline constexpr GLbits kTextureReadBarrierBits = 0x8u | 0x20u | 0x400u;

// ---- state -----------------------------------------------------------------------------------

/// One entry into the device for a scope of calls (RAII). On an adopted context the bindings
/// gltensor changes are read once (when first changed) and put back once, when the scope ends,
/// instead of at each call; on a Device::open device used while another context is current, the
/// device's context is made current once. Inside the scope gltensor assumes its bindings stay
/// in place between its calls: where the application's own GL calls inside the scope change
/// bindings (program, buffers, textures, samplers, image units, active texture), it calls
/// invalidate() before gltensor's next call. Such changes may be overwritten when the scope ends.
/// Throws as a call would (ThreadError, DeviceError when the adopted context is not current).
class StateScope {
 public:
  explicit StateScope(const Device& dev);
  ~StateScope();
  StateScope(const StateScope&) = delete;
  StateScope& operator=(const StateScope&) = delete;
  /// The application changed GL bindings inside the scope: gltensor binds again what it needs.
  void invalidate();

 private:
  std::shared_ptr<detail::DeviceImpl> dev_;
  std::unique_ptr<detail::Enter> enter_;
};

// ---- buffers ---------------------------------------------------------------------------------

/// Bytes [offset, offset + size) of a GL buffer.
struct BufferRange {
  GLname buffer = 0;
  std::size_t offset = 0;  ///< bytes
  std::size_t size = 0;    ///< bytes
};

/// A tensor over the application's buffer, without copy or ownership: row-major `shape` of
/// `dtype` elements starting at byte `offset`. The tensor refers to the buffer object (not a
/// snapshot): ops read and write the buffer in place, every frame, while the buffer exists with
/// the same size (reallocating it with glBufferData needs a new wrap). gltensor never deletes
/// it. Checks (one glGet of the buffer's size per call): offset a multiple of the element size;
/// the elements, rounded up to whole 32-bit words (kernels access words), inside the buffer;
/// the range within the device's max SSBO block size.
/// Throws ValueError (0 or not a buffer, misaligned offset), ShapeError (larger than the
/// buffer), LimitError (past the SSBO limit or 2^31 elements).
Tensor wrap_buffer(const Device& dev, GLname buffer, std::size_t offset, const Shape& shape, DType dtype);
/// The buffer range holding a contiguous tensor's elements, to bind (glBindBufferRange with
/// offset and size: mind GL_*_OFFSET_ALIGNMENT), read as vertex attributes, copy or draw from.
/// Valid while the tensor (or a view of its storage) lives; gltensor writes it only through
/// ops on that tensor. Call release() before the application reads it. The buffer may have
/// immutable storage (glBufferStorage: a replayed Model::run output of up to 256 KiB lies in a
/// host-visible one, see ModelOptions::replay, and so does a plain run's output that a fused MLP
/// writes, see Model::run): bind, read and copy it, never re-specify it with glBufferData.
/// Throws ValueError for a non-contiguous tensor (call contiguous() first).
BufferRange buffer_of(const Tensor& t);

// ---- textures --------------------------------------------------------------------------------

/// A level of an application's GL_TEXTURE_2D texture.
/// Formats: GL_RGBA8, GL_RGBA16F, GL_RGBA32F, GL_R32F (read and written); GL_R8, GL_RG8,
/// GL_R16F, GL_RG16F, GL_RG32F (read only). Normalized formats read as [0, 1] floats; writes
/// clamp to [0, 1] and round to nearest.
struct Texture {
  GLname texture = 0;
  GLenumValue internal_format = 0;  ///< e.g. GL_RGBA8 (0x8058)
  int width = 0, height = 0;        ///< of `level`
  int level = 0;
};

enum class Layout {
  nchw,  ///< [1, C, H, W] (or [C, H, W] given to to_texture): one plane per channel
  nhwc,  ///< [1, H, W, C] (or [H, W, C]): channels interleaved, as texels are
};

/// Where a texture's texel row 0 lies in the picture. A tensor's row 0 is the picture's top
/// (image convention); GL's texture coordinates start at the bottom left, and what is rendered
/// into a texture has its bottom row at texel row 0: so the default flips rows. top_left: texel
/// row 0 is the top (textures uploaded from image files in reading order, as stb_image gives
/// them): no flip.
enum class Origin { bottom_left, top_left };

struct TextureTransfer {
  Layout layout = Layout::nchw;
  Origin origin = Origin::bottom_left;
  /// Tensor channels: from_texture takes the first `channels` of each texel (0 = all of the
  /// format's: 4 for RGBA, 2 for RG, 1 for R). to_texture writes the tensor's channels to the
  /// first texel channels and fills the rest with 0 (alpha with 1).
  int channels = 0;
  /// from_texture: the tensor's dtype (f32 or f16).
  DType dtype = DType::f32;
  /// Per channel (c = 0..3): from_texture gives texel[c] * scale[c] + bias[c]; to_texture
  /// writes value * scale[c] + bias[c]. E.g. normalisation with mean m and deviation s:
  /// scale = 1 / s, bias = -m / s; and back: scale = s, bias = m.
  std::array<float, 4> scale{1, 1, 1, 1};
  std::array<float, 4> bias{0, 0, 0, 0};
};

/// A new tensor from a texture level, on the GPU: [1, C, H, W] (nchw) or [1, H, W, C] (nhwc)
/// with H = tex.height, W = tex.width, through texelFetch (a sampler of gltensor's own, with
/// NEAREST filtering, makes any texture complete: level 0 needs only level 0, a level above it a
/// complete mipmap chain, as glTexStorage2D textures have). The texture's swizzle applies.
/// The texture description is checked against the texture (glGetTexLevelParameteriv) the first
/// time a (texture, level, format, size) is seen. Call acquire() first when the application
/// wrote the texture with image stores, or in another context.
/// Throws ValueError (not a texture, bad level or channels), DTypeError (format, dtype),
/// ShapeError (size differs from the texture's), LimitError (tensor too large).
Tensor from_texture(const Device& dev, const Texture& tex, const TextureTransfer& opt = {});
/// Writes a tensor into a texture level, on the GPU (imageStore): [1, C, H, W] or [C, H, W]
/// (nchw), [1, H, W, C] or [H, W, C] (nhwc), any dtype (converted to float), any strides;
/// C <= the format's channels, H and W those of the level. Formats: GL_RGBA8, GL_RGBA16F,
/// GL_RGBA32F, GL_R32F; on OpenGL ES the texture must be immutable (glTexStorage2D), as image
/// units require. Call release() before the application samples or draws it.
/// Throws ValueError (mutable texture on OpenGL ES, not a texture), DTypeError (format),
/// ShapeError (rank, sizes, channels).
void to_texture(const Tensor& t, const Texture& tex, const TextureTransfer& opt = {});

// ---- filters ---------------------------------------------------------------------------------

/// A frame filter in one dispatch: conv2d (PyTorch/ONNX semantics, cross-correlation, zero
/// padding) from a texture level straight to another texture level, each output texel computed
/// from texelFetch'ed input texels (no tensor in between): out = epilogue(conv2d(in, weight,
/// bias)) per channel, then written as to_texture writes (channels past C_out: 0, alpha 1).
/// in_opt: origin, channels (C_in, 0 = the format's) and the per-channel scale / bias applied to
/// the input texels, as from_texture; out_opt: origin and scale / bias applied before the store.
/// layout and dtype are ignored (weights of any float dtype are read as float; arithmetic f32; f32
/// and f16 weights and bias are read from uniform blocks where they fit one).
/// weight [C_out, C_in, KH, KW] with C_out <= the output format's channels (<= 4), bias [C_out]
/// or undefined; groups 1; the output texture's size must be conv2d's output size for the input
/// texture's (floor((H + pad_top + pad_bottom - dil_y * (KH - 1) - 1) / stride_y) + 1, same for W).
/// Formats as from_texture / to_texture. Records no gradient. Same synchronization as those two:
/// acquire() before, release() after where another context is involved.
/// Throws ValueError (textures, groups != 1, options), ShapeError (weight, bias or texture sizes;
/// an input too small for one window, naming its size, the weight, the options and the output
/// size), DTypeError (formats, integer weights), LimitError (a kernel longer than the device's
/// loop limit).
void conv2d_texture(const Texture& in, const Texture& out, const Tensor& weight, const Tensor& bias = Tensor(),
                    const Conv2dOptions& opt = {}, const Epilogue& epilogue = {}, const TextureTransfer& in_opt = {},
                    const TextureTransfer& out_opt = {});

/// A frame filter chain: texture in -> conv2d and elementwise stages -> texture out, built once
/// and run every frame in as few dispatches as the stages allow: one per conv2d. Elementwise
/// steps before the first conv2d are fused into its input reads (applied to the texels, before the
/// zero padding), later ones into the epilogue of the conv2d before them (TFLite GL's fusion of
/// elementwise nodes into their neighbours); consecutive affine steps (mul, add) are folded into
/// one per-channel affine (in double, rounded once to f32). The first dispatch samples the
/// application's texture (texelFetch), the last writes its image (imageStore, as to_texture);
/// between them intermediates [H, W, C] live in gltensor's buffers, f32 or f16. Arithmetic is f32.
/// Stages are PyTorch's / ONNX's: conv2d (cross-correlation, zero padding, groups 1), relu,
/// clamp (ONNX Clip: NaN stays NaN), any Epilogue activation, mul / add by a scalar or by one value
/// per channel (broadcast over H, W). Records no gradient.
///
///   FrameFilter f(dev);
///   f.conv2d(w1, b1, Conv2dOptions::pad(1)).relu().conv2d(w2, b2, Conv2dOptions::pad(1)).clamp(0, 1);
///   f.run(in, out);  // every frame: 2 dispatches
///
/// Building (each call): ValueError for groups != 1, bad stride / dilation / padding or clip
/// bounds; DTypeError for integer weights or bias; ShapeError for a weight that is not [C_out,
/// C_in, KH, KW], a bias that is not [C_out], C_in not the previous conv2d's C_out, a per-channel
/// vector whose length is not the channel count at that point (the next conv2d's C_in before the
/// first conv2d); DeviceError for tensors of another device. The weights and bias are copied to
/// f32 when added (f16 and bf16 values widen exactly: f16 weights cost what f32 ones cost, with
/// the same results as f32 weights of the same values): later changes to the tensors do not
/// reach the filter.
class FrameFilter {
 public:
  /// Intermediates between conv2d stages: f16 (half the bytes; rounded to nearest even, |x| past
  /// 65504 -> Inf) where the device has fp16 arithmetic (Capabilities::fp16_arithmetic) with
  /// `automatic`, else f32.
  enum class Intermediates { automatic, f32, f16 };
  explicit FrameFilter(const Device& dev, Intermediates mids = Intermediates::automatic);
  ~FrameFilter();
  FrameFilter(FrameFilter&&) noexcept;
  FrameFilter& operator=(FrameFilter&&) noexcept;

  /// conv2d with weight [C_out, C_in, KH, KW] (any float dtype) and bias [C_out] or undefined.
  FrameFilter& conv2d(const Tensor& weight, const Tensor& bias = Tensor(), const Conv2dOptions& opt = {});
  /// An activation (Epilogue: relu, clip, leaky_relu, sigmoid, ...), per element.
  FrameFilter& activation(const Epilogue& act);
  FrameFilter& relu() { return activation(Activation::relu); }
  /// clamp(x, min, max); NaN stays NaN.
  FrameFilter& clamp(double min, double max) { return activation(Epilogue::clip(min, max)); }
  FrameFilter& mul(double s);
  FrameFilter& add(double b);
  /// Per channel: x[c] * s[c] / x[c] + b[c].
  FrameFilter& mul(const std::vector<float>& s);
  FrameFilter& add(const std::vector<float>& b);

  /// Dispatches per run (the conv2d stages).
  std::size_t dispatches() const;
  /// Whether intermediates are f16.
  bool f16_intermediates() const;

  /// Runs the chain from texture level `in` to texture level `out`. in_opt: origin, channels
  /// (the first conv2d's C_in; 0 = the format's) and per-channel scale / bias on the texels (a
  /// first affine step); out_opt: origin and scale / bias before the store (a last affine step).
  /// layout and dtype are ignored. The last conv2d's C_out <= the output format's channels (the
  /// rest written as to_texture does: 0, alpha 1); `out` must have the chain's output size.
  /// Formats as from_texture / to_texture; synchronization as conv2d_texture.
  /// Throws ValueError (no conv2d stage, textures, channels), DTypeError (formats), ShapeError
  /// (sizes, channels), LimitError (an intermediate past the SSBO limit, loops past the device's
  /// loop limit).
  void run(const Texture& in, const Texture& out, const TextureTransfer& in_opt = {},
           const TextureTransfer& out_opt = {});

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- synchronization -------------------------------------------------------------------------

/// Before gltensor reads or writes objects the application wrote (see the contract above):
/// queues glWaitSync(fence) in gltensor's context when a fence is given (the application keeps
/// it and may delete it once acquire returns), then glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT
/// | GL_TEXTURE_FETCH_BARRIER_BIT | GL_SHADER_IMAGE_ACCESS_BARRIER_BIT), and forgets which
/// objects gltensor has bound (shared objects must be bound again to be seen). It also binds 0
/// to gltensor's texture and image units: NVIDIA's driver treats binding the texture that is
/// already bound as a no-op, and image stores then go to the storage the texture had before
/// another context attached it to a framebuffer (an application rebinding objects gltensor
/// wrote should likewise bind 0 first). No host wait.
void acquire(const Device& dev, GLsyncHandle fence = nullptr);
/// Before the application uses objects gltensor wrote: one glMemoryBarrier with `barriers` (the
/// bits of the application's access, GL's convention: GL_VERTEX_ATTRIB_ARRAY_BARRIER_BIT,
/// kTextureReadBarrierBits for textures, GL_PIXEL_BUFFER_BARRIER_BIT, ...; default all) plus
/// the bits of gltensor's own pending hazards (those its next dispatches would need, e.g. the
/// next frame's store into the texture it wrote: no second barrier then), and, with `fence`, a
/// new fence after all recorded work, flushed (glFlush), owned by the application. Without
/// `fence` (the application uses the objects in the device's own context, where GL orders the
/// commands) only the barrier: nothing is flushed. No host wait.
GLsyncHandle release(const Device& dev, GLbits barriers = kAllBarrierBits, bool fence = true);
/// A fence that signals once the tensor's last writer (and the work recorded before this call)
/// has finished: release(t's device, barriers) with the fence made after that writer's batch.
GLsyncHandle release(const Tensor& t, GLbits barriers = kAllBarrierBits);

}  // namespace interop
}  // namespace gltensor
