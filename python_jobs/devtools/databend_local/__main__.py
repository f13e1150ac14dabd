"""python -m python_jobs.devtools.databend_local --port 8000 --data-dir .databend-local"""

import sys

from python_jobs.devtools.databend_local.server import main

if __name__ == "__main__":
    sys.exit(main())
