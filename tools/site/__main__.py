import sys

from tools.site.build import main

sys.exit(main())
