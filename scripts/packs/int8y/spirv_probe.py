#!/usr/bin/env python3
"""Lists the SPIR-V extensions a desktop GL 4.6 context of NVIDIA's EGL accepts through
GL_ARB_gl_spirv / GL_ARB_spirv_extensions (GL_NUM_SPIR_V_EXTENSIONS, glGetStringi(GL_SPIR_V_EXTENSIONS)),
to see whether SPV_KHR_integer_dot_product is among them (issue 22). ctypes only: EGL device
platform, no config, surfaceless context."""
import ctypes as C
import sys

egl = C.CDLL("libEGL.so.1")
egl.eglGetProcAddress.restype = C.c_void_p
egl.eglGetProcAddress.argtypes = [C.c_char_p]


def proc(name, res, *args):
    p = egl.eglGetProcAddress(name.encode())
    if not p:
        sys.exit("no " + name)
    return C.CFUNCTYPE(res, *args)(p)


EGL_PLATFORM_DEVICE_EXT, EGL_NONE, EGL_OPENGL_API = 0x313F, 0x3038, 0x30A2
query_devices = proc("eglQueryDevicesEXT", C.c_uint, C.c_int, C.POINTER(C.c_void_p), C.POINTER(C.c_int))
platform_display = proc("eglGetPlatformDisplayEXT", C.c_void_p, C.c_uint, C.c_void_p, C.POINTER(C.c_int))
devs = (C.c_void_p * 8)()
n = C.c_int(0)
query_devices(8, devs, C.byref(n))
print("EGL devices:", n.value)
egl.eglInitialize.argtypes = [C.c_void_p, C.POINTER(C.c_int), C.POINTER(C.c_int)]
egl.eglBindAPI.argtypes = [C.c_uint]
egl.eglCreateContext.restype = C.c_void_p
egl.eglCreateContext.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p, C.POINTER(C.c_int)]
egl.eglMakeCurrent.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p, C.c_void_p]
egl.eglQueryString.restype = C.c_char_p
egl.eglQueryString.argtypes = [C.c_void_p, C.c_int]
for i in range(n.value):
    dpy = platform_display(EGL_PLATFORM_DEVICE_EXT, devs[i], None)
    ma, mi = C.c_int(), C.c_int()
    if not dpy or not egl.eglInitialize(dpy, C.byref(ma), C.byref(mi)):
        print("device", i, ": no display")
        continue
    vendor = egl.eglQueryString(dpy, 0x3053)
    print("device", i, "EGL", ma.value, mi.value, vendor)
    egl.eglBindAPI(EGL_OPENGL_API)
    attrs = (C.c_int * 7)(0x3098, 4, 0x30FB, 6, 0x30FD, 1, EGL_NONE)  # 4.6 core
    ctx = egl.eglCreateContext(dpy, None, None, attrs)
    if not ctx or not egl.eglMakeCurrent(dpy, None, None, ctx):
        print("  no GL 4.6 context")
        continue
    get_string = proc("glGetString", C.c_char_p, C.c_uint)
    get_stringi = proc("glGetStringi", C.c_char_p, C.c_uint, C.c_uint)
    get_integerv = proc("glGetIntegerv", None, C.c_uint, C.POINTER(C.c_int))
    print("  GL_VERSION", get_string(0x1F02), "GL_RENDERER", get_string(0x1F01))
    cnt = C.c_int(-1)
    get_integerv(0x9554, C.byref(cnt))  # GL_NUM_SPIR_V_EXTENSIONS
    print("  GL_NUM_SPIR_V_EXTENSIONS", cnt.value)
    for k in range(max(cnt.value, 0)):
        print("   ", get_stringi(0x9553, k).decode())  # GL_SPIR_V_EXTENSIONS
    formats = C.c_int(-1)
    get_integerv(0x8DF9, C.byref(formats))  # GL_NUM_SHADER_BINARY_FORMATS
    fl = (C.c_int * max(formats.value, 1))()
    if formats.value > 0:
        get_integerv(0x8DF8, fl)  # GL_SHADER_BINARY_FORMATS
    print("  shader binary formats", [hex(fl[k]) for k in range(max(formats.value, 0))],
          "(0x9551 = GL_SHADER_BINARY_FORMAT_SPIR_V)")
    break
