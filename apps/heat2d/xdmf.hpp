#pragma once
// The XDMF sidecar of a heat2d result file (<out> with .xmf), for ParaView and VisIt: a uniform 2-D
// grid and the file's fields on it. Both modes write theirs with it: the explicit mode's field on
// the grid points, the implicit mode's fields on the cells.

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tally/common/error.hpp"

namespace tally::heat2d {

struct XdmfGrid {
  std::string name;             ///< the grid's name in the file
  std::int64_t ny = 0, nx = 0;  ///< grid points (vertices) along y and x
  double y0 = 0, x0 = 0;        ///< the origin
  double dy = 0, dx = 0;        ///< the spacing
  bool on_cells = false;        ///< the fields live on the cells ((ny-1) x (nx-1)), else on the points
  struct Field {
    std::string name, dataset;  ///< as ParaView shows it, and the dataset under / holding it
  };
  std::vector<Field> fields;
  int precision_bytes = 8;  ///< 4 (float) or 8 (double)
};

/// Writes <h5_path with .xmf> describing `g`; throws tally::Error when it cannot.
inline void write_xdmf(const std::string& h5_path, const XdmfGrid& g) {
  namespace fs = std::filesystem;
  const fs::path xmf = fs::path(h5_path).replace_extension(".xmf");
  const std::string points = std::to_string(g.ny) + " " + std::to_string(g.nx);
  const std::string values = g.on_cells ? std::to_string(g.ny - 1) + " " + std::to_string(g.nx - 1) : points;
  const std::string file = fs::path(h5_path).filename().string();
  std::ofstream f(xmf);
  f.precision(17);
  f << "<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n  <Domain>\n"
    << "    <Grid Name=\"" << g.name << "\" GridType=\"Uniform\">\n"
    << "      <Topology TopologyType=\"2DCoRectMesh\" Dimensions=\"" << points << "\"/>\n"
    << "      <Geometry GeometryType=\"ORIGIN_DXDY\">\n"
    << "        <DataItem Dimensions=\"2\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">" << g.y0 << " " << g.x0
    << "</DataItem>\n"
    << "        <DataItem Dimensions=\"2\" NumberType=\"Float\" Precision=\"8\" Format=\"XML\">" << g.dy << " " << g.dx
    << "</DataItem>\n      </Geometry>\n";
  for (const XdmfGrid::Field& a : g.fields)
    f << "      <Attribute Name=\"" << a.name << "\" AttributeType=\"Scalar\" Center=\""
      << (g.on_cells ? "Cell" : "Node") << "\">\n        <DataItem Dimensions=\"" << values
      << "\" NumberType=\"Float\" Precision=\"" << g.precision_bytes << "\" Format=\"HDF\">" << file << ":/"
      << a.dataset << "</DataItem>\n      </Attribute>\n";
  f << "    </Grid>\n  </Domain>\n</Xdmf>\n";
  if (!f) throw Error("cannot write " + xmf.string());
}

}  // namespace tally::heat2d
