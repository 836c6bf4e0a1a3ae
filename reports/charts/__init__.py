"""Charts as inline SVG; matplotlib's backend is chosen here, before any chart module imports pyplot."""

import matplotlib

matplotlib.use("svg")
