# The reference solutions as dtl::ref (cmake -DLAB=ddp -DIN=labs/ddp/solutions.cpp
# -DOUT=copy.cpp -P reference_copy.cmake): labs/<lab>/solutions.cpp with its namespace
# dtl::ex renamed dtl::ref and labs/<lab>/reference.h included for the declarations. The
# exercise track links these copies so that a stub not written yet can run the reference
# (exercises/unwritten.h). One source, two names: the solutions track's dtl::ex and this.
file(READ ${IN} text)
foreach(anchor "#include \"labs/${LAB}/exercises.h\"" "namespace dtl::ex {" "}  // namespace dtl::ex")
  string(FIND "${text}" "${anchor}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "reference_copy.cmake: ${IN} no longer contains '${anchor}'")
  endif()
endforeach()
string(REPLACE "#include \"labs/${LAB}/exercises.h\"" "#include \"labs/${LAB}/reference.h\"" text "${text}")
string(REPLACE "namespace dtl::ex {" "namespace dtl::ref {" text "${text}")
string(REPLACE "}  // namespace dtl::ex" "}  // namespace dtl::ref" text "${text}")
file(WRITE ${OUT} "// Generated from ${IN} by exercises/reference_copy.cmake: do not edit.\n#line 1 \"${IN}\"\n${text}")
