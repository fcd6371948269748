"""中文故事：群里顺口提到、后来又聊回来的事（``script.py`` 的写法）。

证据行标 ``*label``；问题尽量换个说法问（“驾照到手”问成“什么时候能开车上路”）。
"""

# ruff: noqa: E501 (a line of a scene is one chat message, its wordings side by side)

from __future__ import annotations

from bench.longmem.script import Story, ask, story

PETS = ["豆豆", "可乐", "团子", "年糕", "馒头", "橘子", "花卷"]
BREEDS = ["柯基", "柴犬", "泰迪", "金毛", "边牧", "比熊"]
FRUITS = ["芒果", "菠萝", "猕猴桃"]
COMPANIES = ["星河科技", "远景数据", "蓝鲸物流", "青橙教育", "云帆医疗", "北辰汽车", "拾光传媒"]
AREAS = ["浦东", "闵行", "徐汇", "望京", "回龙观", "南山", "天河", "滨江"]
WEDDINGS = [("十月三号", "十月十八号"), ("五月二十号", "六月一号"), ("国庆第二天", "十一月九号")]
BIRTHDAYS = ["农历八月十五", "十一月二号", "三月十四号", "七月七号"]
OLD_CARS = ["老捷达", "二手飞度", "老款POLO", "十年的凯美瑞"]
NEW_CARS = ["比亚迪秦", "特斯拉Model 3", "理想L6", "小鹏P7"]
BABIES = ["小满", "糖糖", "嘟嘟", "安安"]
RESTAURANTS = [("老成都川菜馆", "竹林"), ("海底捞", "12号"), ("外婆家", "荷花厅"), ("西贝", "A3")]
TIMES = ["六点半", "七点", "六点"]
DISHES = ["红烧肉", "糖醋排骨", "清蒸鲈鱼", "可乐鸡翅"]
BUYS = ["卤味", "凉菜", "水果"]
SWEETS = ["八宝饭", "汤圆", "一个水果蛋糕"]
SCORES = ["7.5", "7", "6.5"]
GYMS = [("乐刻", "超级猩猩"), ("小区楼下那家", "公司附近的威尔士"), ("游泳馆旁边那家", "乐刻")]
RENTS = ["4800", "6200", "3500", "5300"]
TOWNS = ["湖南岳阳", "四川绵阳", "山东烟台", "江西赣州", "广西柳州"]
TRIPS = [("杭州", "十号到十二号"), ("厦门", "十七号到十九号"), ("青岛", "二号到四号")]
AMOUNTS = ["260", "180", "320", "150"]
CUISINES = [
    ("湘菜", "辣妹子", "小炒黄牛肉"),
    ("粤菜", "陶陶居", "虾饺"),
    ("东北菜", "老铁家", "锅包肉"),
]
HOBBIES = [("游泳课", "游泳"), ("吉他课", "弹吉他"), ("陶艺课", "捏陶")]
COLORS = [("灰色", "白色"), ("米黄色", "浅灰色")]
KIDS = ["乐乐", "朵朵", "小宇"]
SCHOOLS = ["实验小学", "育才小学", "第二中心小学"]
WIFI = [("LinJia_5G", "lin2024home"), ("TP-LINK_8A2F", "88886666lin")]
TRAINS = [("G1372", "下午三点"), ("D2281", "晚上七点")]
FISH = ["六", "八", "五"]
WEEKS = ["两", "三", "四"]
GIFTS = [("一条羊绒围巾", "按摩仪"), ("一个新手机", "足浴盆")]

STORIES: dict[str, Story] = {}


def _add(item: Story) -> None:
    STORIES[item.key] = item


_add(
    story(
        "zh_dog",
        [
            """
            B: 周末有人出来玩吗 | 这周六谁有空
            A*name: 我不行，要带{pet}去打疫苗，那只{breed}上次在医院叫得整层楼都听见 | 我周六得陪{pet}去宠物医院，这{breed}又把袜子吞了
            C: 哈哈哈哈心疼医生 | 笑死，它没事吧
            A: 没事，活蹦乱跳的 | 没事，就是欠揍
            """,
            """
            +3-9
            B: {pet}最近乖不乖 | 你家狗子还拆家吗
            A: 昨天刚啃了我一个拖鞋 | 乖个鬼，沙发腿都咬了
            """,
        ],
        [ask("single", "{A}家的狗叫什么名字？ | {A}养的那只狗叫啥来着？", "{pet}", "name")],
        {"pet": PETS, "breed": BREEDS},
    )
)

_add(
    story(
        "zh_allergy",
        [
            """
            B: 下午茶点了水果捞，大家要什么口味 | 我点水果拼盘了啊
            A*fruit: 别给我放{fruit}，我过敏，上次吃完嘴肿了两天 | 我那份不要{fruit}啊，一吃就过敏
            C: 收到收到 | 记住了
            """,
        ],
        [ask("single", "{A}有什么水果不能碰？ | 给{A}买水果要注意避开什么？", "{fruit}", "fruit")],
        {"fruit": FRUITS},
    )
)

_add(
    story(
        "zh_job",
        [
            """
            B: 最近工作咋样 | 大家最近忙不忙
            A*old: 还在{old}搬砖呢，天天加班到九点 | 老样子，{old}这边项目一个接一个
            C: 打工人打工魂 | 都一样
            """,
            """
            +2-6
            A: 跟你们说个事 | 有个消息
            A*new: 我下个月去{new}了，offer今天刚签 | 我跳槽了，下个月开始去{new}上班
            B: 牛啊！涨了多少 | 恭喜恭喜，请吃饭
            C: 早该走了
            """,
            """
            +1-3
            A*first: 今天第一天去{new}报到，工位靠窗，还发了个保温杯 | 新公司第一天，啥也没干，光装电脑了
            B: 感觉怎么样 | 同事好相处不
            A: 还行，食堂不错 | 挺好的，就是会议室太难订
            """,
        ],
        [
            ask("changed", "{A}现在在哪家公司上班？ | {A}目前在哪儿工作？", "{new}", "new", "old"),
            ask("when", "{A}是哪天开始去新单位的？", "@date", "first"),
        ],
        {"old": COMPANIES, "new": COMPANIES},
    )
)

_add(
    story(
        "zh_move",
        [
            """
            A*old: 打算搬到{first}那边，离公司近一点 | 房子快到期了，准备去{first}找房
            B: {first}房租不便宜吧 | 好啊，通勤能省不少时间
            """,
            """
            +1-4
            C: 房子找得咋样了 | 搬家的事定了没
            A: 还在看，头大 | 别提了，中介天天放鸽子
            """,
            """
            +1-3
            A*new: {first}那套没谈下来，最后在{second}租了个两居，下周搬 | 最后定在{second}了，{first}那边房东临时涨价
            B: {second}也挺好，吃的多 | 需要帮忙搬家说一声
            """,
        ],
        [
            ask(
                "changed",
                "{A}最后搬去了哪个区？ | {A}新租的房子在哪一片？",
                "{second}",
                "new",
                "old",
            )
        ],
        {"first": AREAS, "second": AREAS},
    )
)

_add(
    story(
        "zh_wedding",
        [
            """
            A*old: 婚礼日子定了，{dates[0]}，到时候都来啊 | 正式通知：我们{dates[0]}办婚礼，都给我空出来
            B: 必须的！ | 恭喜恭喜，份子钱已备好
            C: 伴郎我预定了
            """,
            """
            +2-5
            A*new: 酒店那边档期冲突，婚礼改到{dates[1]}了，大家改一下日历 | 不好意思，婚期挪到{dates[1]}了，酒店搞错了
            B: 没问题，那天也行 | 收到，改好了
            """,
        ],
        [
            ask(
                "changed",
                "{A}的婚礼在哪天办？ | {A}结婚请客是什么时候？",
                "{dates[1]}",
                "new",
                "old",
            )
        ],
        {"dates": WEDDINGS},
    )
)

_add(
    story(
        "zh_license",
        [
            """
            B: 今天考试吧？加油！ | {A}今天科目三是不是
            A: 紧张死了
            """,
            """
            +0-0
            A*pass: 过了！！科目三一把过，驾照到手 | 考过了！终于拿到驾照了
            C: 厉害！以后靠你接送了 | 恭喜恭喜，新手上路
            """,
        ],
        [ask("when", "{A}是什么时候可以开车上路的？ | {A}哪天考下驾照的？", "@date", "pass")],
    )
)

_add(
    story(
        "zh_birthday",
        [
            """
            B: 下次聚会定啥时候 | 好久没聚了
            A*day: 我生日是{day}，提前说一声哈，礼物随意 | 提醒一下，{day}是我生日，暗示得够明显了吧
            C: 记下了 | 哈哈收到
            """,
        ],
        [ask("single", "{A}哪天过生日？", "{day}", "day")],
        {"day": BIRTHDAYS},
    )
)

_add(
    story(
        "zh_car",
        [
            """
            A*old: 我那辆{old}又趴窝了，修一次两千多 | {old}又进修理厂了，该换了
            B: 早该换了 | 开了多少年了
            """,
            """
            +2-5
            A*new: 新车提了！{new}，以后不用挤地铁了 | 提车了，{new}，周末带你们兜风
            C: 土豪 | 恭喜提车
            """,
        ],
        [ask("changed", "{A}现在开的是什么车？", "{new}", "new", "old")],
        {"old": OLD_CARS, "new": NEW_CARS},
    )
)

_add(
    story(
        "zh_baby",
        [
            """
            A*born: 生了！！今天早上六点，母子平安，小名叫{baby} | 报喜：宝宝今天早上出生了，小名{baby}，大人孩子都好
            B: 恭喜恭喜！！ | 太好了，快发照片
            C: 红包已备好
            """,
            """
            +2-5
            B: {baby}最近怎么样 | 小宝贝睡得好吗
            A: 晚上三个小时醒一次，我已经不是人了 | 长得飞快，一天一个样
            """,
        ],
        [
            ask("when", "{A}家的孩子是哪天出生的？", "@date", "born"),
            ask("single", "{A}家宝宝的小名叫什么？", "{baby}", "born"),
        ],
        {"baby": BABIES},
    )
)

_add(
    story(
        "zh_party",
        [
            """
            A: 周六聚一下吧，好久没见了 | 这周六吃个饭？
            B*where: 我订了{restaurant[0]}，包间叫{restaurant[1]} | 订好了，{restaurant[0]}，{restaurant[1]}包间
            C: 好嘞
            """,
            """
            +0-0
            C: 几点啊 | 周六几点到
            B*when: {time}，别迟到 | 晚上{time}，我先到占位置
            """,
        ],
        [
            ask(
                "multi",
                "这次聚餐定在哪家、几点开始？ | 周六吃饭去哪儿，几点？",
                "{restaurant[0]}，{time}",
                "where when",
            )
        ],
        {"restaurant": RESTAURANTS, "time": TIMES},
    )
)

_add(
    story(
        "zh_dinner",
        [
            """
            A: 这周日在家聚餐，大家分个工 | 周日家里吃饭，咱们分一下谁做什么
            B*b: 我来做{dish} | {dish}交给我
            C*c: 我负责买{buy}和饮料 | 我去买{buy}，再带两箱饮料
            D*d: 甜品我来，带{sweet}过去 | 甜品我包了，{sweet}
            A: 完美
            """,
        ],
        [
            ask(
                "multi",
                "周日家里聚餐大家各自负责什么？ | 那次在家聚餐是怎么分工的？",
                "{B}：{dish}；{C}：{buy}和饮料；{D}：{sweet}",
                "b c d",
            )
        ],
        {"dish": DISHES, "buy": BUYS, "sweet": SWEETS},
    )
)

_add(
    story(
        "zh_ielts",
        [
            """
            B: 成绩出来了吗 | 雅思出分了没
            A*score: 出了！总分{score}，够申请了 | {score}！口语终于上6了
            C: 学霸 | 太强了
            """,
        ],
        [ask("single", "{A}英语考试考了多少分？", "{score}", "score")],
        {"score": SCORES},
    )
)

_add(
    story(
        "zh_gym",
        [
            """
            A*old: 我在{gyms[0]}办了年卡，以后监督我 | 健身卡办了，{gyms[0]}，一周三次
            B: 三天打鱼两天晒网 | 坚持住
            """,
            """
            +2-6
            A*new: {gyms[0]}跑路了，卡里还剩半年，我现在改去{gyms[1]}了 | 原来那家关门了，我现在在{gyms[1]}练
            C: 惨 | 钱能退吗
            """,
        ],
        [ask("changed", "{A}现在去哪个健身房锻炼？", "{gyms[1]}", "new", "old")],
        {"gyms": GYMS},
    )
)

_add(
    story(
        "zh_rent",
        [
            """
            A: 房东又来消息了 | 中介刚打电话
            B: 不会是涨房租吧
            A*rent: 对，下个月开始涨到{rent}一个月 | 是的，从下个月起{rent}，一年涨了五百
            C: 太黑了
            """,
        ],
        [ask("single", "{A}的房租要涨到多少？", "{rent}", "rent")],
        {"rent": RENTS},
    )
)

_add(
    story(
        "zh_hometown",
        [
            """
            B: 过年都回家吗 | 春节你们回老家不
            A*town: 回，我老家{town}的，高铁四个小时 | 肯定回啊，{town}，高铁也就四个小时，我妈已经开始催了
            C: 我今年不回了，机票太贵
            """,
        ],
        [ask("single", "{A}是哪里人？ | {A}的老家在哪儿？", "{town}", "town")],
        {"town": TOWNS},
    )
)

_add(
    story(
        "zh_trip",
        [
            """
            A: 下个月出去玩一趟吧 | 下个月有人想出去转转吗
            B*where: 去{trip[0]}？我查了，高铁两个多小时 | {trip[0]}怎么样，不远，吃的也多
            C: 可以
            """,
            """
            +1-3
            B*when: 酒店订好了，下个月{trip[1]}，两间房 | 订好了，下个月{trip[1]}，两间房都在市中心
            A: 效率
            """,
        ],
        [
            ask(
                "multi",
                "下个月那趟出游去哪儿，哪几天？ | 大家约好的那次旅行去哪、几号？",
                "{trip[0]}，{trip[1]}",
                "where when",
            )
        ],
        {"trip": TRIPS},
    )
)

_add(
    story(
        "zh_owe",
        [
            """
            A*owe: {B}，上次唱K的钱你还差我{amount}块哈，不急 | 提醒一下{B}，KTV那次{amount}块记得转我
            B: 啊忘了，马上转 | 发工资就转
            """,
        ],
        [ask("single", "{B}欠{A}多少钱？", "{amount}", "owe")],
        {"amount": AMOUNTS},
    )
)

_add(
    story(
        "zh_food",
        [
            """
            B: 附近有啥好吃的推荐吗，我爸妈要来 | 周末请客，求推荐馆子
            A*rec: 想吃{cuisine[0]}就去{cuisine[1]}，他们家{cuisine[2]}一绝 | {cuisine[1]}！点{cuisine[2]}，不踩雷
            C: 同推
            """,
        ],
        [ask("single", "{A}推荐请家人吃饭去哪家店？", "{cuisine[1]}", "rec")],
        {"cuisine": CUISINES},
    )
)

_add(
    story(
        "zh_hobby",
        [
            """
            A*start: 今晚第一节{hobby[0]}，有点紧张 | 报了个{hobby[0]}，今天第一次上
            B: 加油 | 好好学
            """,
            """
            +1-4
            B: 课上得怎么样了 | 还在坚持吗
            A: 还行，就是老师好凶 | 进步不大，但挺开心
            """,
        ],
        [ask("when", "{A}是什么时候开始学{hobby[1]}的？", "@date", "start")],
        {"hobby": HOBBIES},
    )
)

_add(
    story(
        "zh_ankle",
        [
            """
            A: 昨天打球崴脚了 | 下楼梯踩空，脚肿成馒头了
            B: 严重吗 | 骨头没事吧
            A*weeks: 没骨折，韧带拉伤，医生说{weeks}个星期别运动 | 拍了片子，没伤到骨头，医生让我休息{weeks}周
            C: 好好养着
            """,
        ],
        [ask("single", "医生让{A}休息多久不能运动？", "{weeks}周", "weeks")],
        {"weeks": WEEKS},
    )
)

_add(
    story(
        "zh_gamenight",
        [
            """
            A*old: 以后每周四晚上八点开黑，雷打不动 | 定了啊，周四晚上八点，游戏
            B: 好
            """,
            """
            +2-5
            B: 周四我要上夜班了，能换一天吗 | 周四我最近都加班，改一天？
            C: 周三我可以
            A*new: 行，那改成每周三晚上八点 | 那就周三吧，时间不变
            """,
        ],
        [ask("changed", "现在每周哪天晚上一起打游戏？", "周三", "new", "old")],
    )
)

_add(
    story(
        "zh_nocilantro",
        [
            """
            A*diet/remember: 我不吃香菜，也不吃葱
            B: 机器人都记住了哈哈
            """,
        ],
        [ask("single", "我跟你说过我有哪些东西不吃？", "香菜、葱", "diet", asker="A")],
    )
)

# -- 家庭 ------------------------------------------------------------------------------------

_add(
    story(
        "zh_bp",
        [
            """
            A: 体检报告出来了 | 今天去医院拿了体检结果
            B: 怎么样 | 没啥问题吧
            A*doctor: 血压有点高，医生让少吃盐，每天早上量一次 | 血压偏高，医生说要少盐，早上起来先量血压
            C: 那以后菜做淡一点 | 烟也别抽了
            """,
        ],
        [ask("single", "医生对{A}的血压有什么叮嘱？", "少吃盐，每天早上量血压", "doctor")],
    )
)

_add(
    story(
        "zh_tiles",
        [
            """
            A*old: 厨房瓷砖选了{colors[0]}的，耐脏 | 瓷砖定了，厨房用{colors[0]}
            B: 挺好
            """,
            """
            +2-5
            A*new: 厨房瓷砖最后还是换成{colors[1]}了，{colors[0]}铺出来太暗 | 改主意了，厨房换{colors[1]}瓷砖
            C: {colors[1]}亮堂
            """,
        ],
        [ask("changed", "厨房最后铺的是什么颜色的砖？", "{colors[1]}", "new", "old")],
        {"colors": COLORS},
    )
)

_add(
    story(
        "zh_school",
        [
            """
            B: {kid}上学的事定了吗 | {kid}学校分下来没有
            A*school: 定了，九月去{school}，走路十分钟 | 分到{school}了，离家近
            C: 太好了
            """,
        ],
        [ask("single", "{kid}要去哪所学校读书？", "{school}", "school")],
        {"kid": KIDS, "school": SCHOOLS},
    )
)

_add(
    story(
        "zh_wifi",
        [
            """
            A*wifi/pin: 家里新的WiFi：{wifi[0]}，密码{wifi[1]}
            B: 好的
            """,
        ],
        [ask("single", "家里的无线网密码是多少？", "{wifi[1]}", "wifi")],
        {"wifi": WIFI},
    )
)

_add(
    story(
        "zh_grandma",
        [
            """
            A: 奶奶住院了，大家别担心，医生说观察几天 | 跟大家说一下，奶奶今天有点胸闷，住院观察
            B: 哪个医院？我下班过去 | 严重吗
            """,
            """
            +1-2
            A*home: 奶奶今天出院了，精神挺好，还嫌医院饭难吃 | 奶奶出院回家了，一切正常
            C: 太好了 | 谢天谢地
            """,
        ],
        [ask("when", "奶奶是哪天出院回家的？", "@date", "home")],
    )
)

_add(
    story(
        "zh_train",
        [
            """
            A*ticket: 抢到了！周五的高铁，{train[0]}次，{train[1]}到 | 周五回家的票买到了，{train[0]}，{train[1]}到站
            B: 太好了
            """,
            """
            +0-1
            B*pick: 那天我开车去车站接你 | 到时候我去南站接
            A: 好嘞
            """,
        ],
        [
            ask(
                "multi",
                "{A}这次回家坐哪趟车、谁去车站接？",
                "{train[0]}，{train[1]}到，{B}去接",
                "ticket pick",
            )
        ],
        {"train": TRAINS},
    )
)

_add(
    story(
        "zh_fish",
        [
            """
            A*fish: 今天钓了一条{fish}斤的草鱼！ | 水库收获：草鱼一条，{fish}斤
            B: 厉害 | 晚上红烧
            C: 又要吃一个星期的鱼了
            """,
        ],
        [ask("single", "{A}钓的那条鱼有多重？", "{fish}斤", "fish")],
        {"fish": FISH},
    )
)

_add(
    story(
        "zh_gift",
        [
            """
            A: 下周妈生日，礼物准备了吗 | 妈妈生日快到了
            B*b: 我买了{gifts[0]} | 我这边是{gifts[0]}，已经到了
            """,
            """
            +0-1
            C*c: 我订了{gifts[1]}，周五送到 | 我买的是{gifts[1]}
            A: 那我订蛋糕
            """,
        ],
        [ask("multi", "大家给妈妈准备了什么生日礼物？", "{gifts[0]}；{gifts[1]}", "b c")],
        {"gifts": GIFTS},
    )
)

# -- 多条消息才说全的事 -------------------------------------------------------------------------

CATS = ["咪咪", "煤球", "雪糕", "可颂"]
TRAVEL = [("大理", "丽江"), ("西安", "洛阳"), ("厦门", "泉州")]

_add(
    story(
        "zh_movehelp",
        [
            """
            A: 周六搬家，求支援，管饭 | 这周六搬家，谁有空来帮把手
            B*b: 我上午可以，开我家那辆SUV过去 | 上午我来，我有车能拉东西
            C*c: 我下午过去，帮你装柜子 | 下午我到，组装家具交给我
            A: 爱你们
            """,
        ],
        [ask("multi", "{A}搬家那天谁来帮忙，各自干什么？", "{B}上午开车；{C}下午装柜子", "b c")],
    )
)

_add(
    story(
        "zh_doctor",
        [
            """
            A*one: 去医院看了，医生说我胃不好，咖啡得戒了 | 胃镜做完了，医生让我别喝咖啡
            B: 那你怎么活 | 心疼
            """,
            """
            +1-4
            A*two: 医生还说晚饭必须八点前吃完，不能再吃夜宵了 | 还有一条医嘱：晚上八点以后不准吃东西
            C: 夜宵群要失去一员大将了
            """,
        ],
        [ask("multi", "医生让{A}在生活上改哪些习惯？", "戒咖啡；晚上八点后不吃东西", "one two")],
    )
)

_add(
    story(
        "zh_travel",
        [
            """
            A*one: 到{cities[0]}了！天蓝得不像话 | 第一站{cities[0]}，晒黑了
            B: 羡慕 | 发照片
            """,
            """
            +0-2
            A*two: 今天到{cities[1]}，古城人太多了，但是吃的真不错 | 转战{cities[1]}了，腿走断了
            C: 注意安全
            """,
        ],
        [ask("multi", "{A}这趟旅行去了哪两个地方？", "{cities[0]}和{cities[1]}", "one two")],
        {"cities": TRAVEL},
    )
)

_add(
    story(
        "zh_cat",
        [
            """
            A*home: 给大家介绍一下新成员：{cat}，今天从救助站接回来的，三个月大 | 我领养了一只小猫，叫{cat}，今天刚到家
            B: 好可爱！！ | 快多发几张
            C: 云吸猫
            """,
            """
            +2-6
            A: {cat}学会开柜门了，我要疯了 | {cat}昨晚把我的耳机线咬断了
            B: 哈哈哈哈 | 猫主子
            """,
        ],
        [
            ask("when", "{A}是哪天把小猫领回家的？", "@date", "home"),
            ask("single", "{A}家的猫叫什么？", "{cat}", "home"),
        ],
        {"cat": CATS},
    )
)

_add(
    story(
        "zh_keys",
        [
            """
            A*keys: 新房钥匙拿到了！！终于有自己的窝了 | 今天交房，拿到钥匙了
            B: 恭喜！什么时候暖房 | 太好了，装修打算怎么弄
            A: 先晾半年再说
            """,
        ],
        [ask("when", "{A}是哪天拿到新房钥匙的？", "@date", "keys")],
    )
)

# -- 更多 -----------------------------------------------------------------------------------------

HOTELS = [("希尔顿", "万豪"), ("君悦", "香格里拉"), ("喜来登", "洲际")]
FLIGHTS = [("三亚", "晚上九点四十"), ("昆明", "下午五点半"), ("哈尔滨", "中午十二点十分")]
PHONES = [("iPhone 11", "华为Mate 60"), ("小米10", "iPhone 15"), ("OPPO Reno", "荣耀Magic6")]
CODES = ["3812", "6027", "1946"]

_add(
    story(
        "zh_promo",
        [
            """
            A*promo: 刚谈完话，升主管了！ | 报告一个好消息，我升职了
            B: 请客请客 | 恭喜！涨工资了吧
            C: 苟富贵勿相忘
            """,
        ],
        [ask("when", "{A}是哪天升职的？", "@date", "promo")],
    )
)

_add(
    story(
        "zh_bike",
        [
            """
            A*stolen: 电动车被偷了，就在小区门口，锁都剪了 | 我的电瓶车没了，停楼下一晚上就被偷了
            B: 报警没 | 太可恶了
            A: 报了，估计找不回来
            """,
        ],
        [ask("when", "{A}的电动车是哪天丢的？", "@date", "stolen")],
    )
)

_add(
    story(
        "zh_hotel",
        [
            """
            A*old: 婚宴酒店定了，{hotels[0]}，宴会厅能坐三十桌 | 酒店订好了，在{hotels[0]}办
            B: 气派
            """,
            """
            +2-6
            A*new: {hotels[0]}那边装修，婚宴只能改到{hotels[1]}了，时间不变 | 酒店换了，现在是{hotels[1]}
            C: {hotels[1]}也不错 | 折腾
            """,
        ],
        [ask("changed", "{A}的婚宴最后在哪个酒店办？", "{hotels[1]}", "new", "old")],
        {"hotels": HOTELS},
    )
)

_add(
    story(
        "zh_flight",
        [
            """
            B: 周日几点回来？我去接你 | 要不要去机场接你
            A*land: 从{flight[0]}飞回来，{flight[1]}落地 | 航班{flight[1]}到，麻烦你了
            B: 好，到时候出口见
            """,
        ],
        [ask("single", "{A}周日的飞机几点到？", "{flight[1]}", "land")],
        {"flight": FLIGHTS},
    )
)

_add(
    story(
        "zh_phone",
        [
            """
            A*old: 我这{phones[0]}电池不行了，一天充三次 | 还在用{phones[0]}，卡得要死
            B: 换呗
            """,
            """
            +2-6
            A*new: 新手机到了，{phones[0]}光荣退休，现在用{phones[1]} | 换了{phones[1]}，拍照真清楚
            C: 有钱 | 好看
            """,
        ],
        [ask("changed", "{A}现在用的是什么手机？", "{phones[1]}", "new", "old")],
        {"phones": PHONES},
    )
)

_add(
    story(
        "zh_doorcode",
        [
            """
            A*code/pin: 单元门禁密码改成{code}了，按完再按#号
            B: 收到
            """,
        ],
        [ask("single", "单元门的密码现在是多少？", "{code}", "code")],
        {"code": CODES},
    )
)


def _also(key: str, *more: object) -> None:
    """同一个故事的更多问题。"""
    from dataclasses import replace

    STORIES[key] = replace(STORIES[key], asks=STORIES[key].asks + tuple(more))  # type: ignore[arg-type]


_also("zh_dog", ask("single", "{A}家的狗是什么品种？", "{breed}", "name"))
_also("zh_job", ask("single", "{A}跳槽之前在哪家公司？", "{old}", "old"))
_also("zh_move", ask("single", "{A}一开始想搬到哪儿？", "{first}", "old"))
_also("zh_wedding", ask("single", "{A}的婚礼原本定的哪天？", "{dates[0]}", "old"))
_also("zh_car", ask("single", "{A}换车之前开的是什么？", "{old}", "old"))
_also("zh_gym", ask("single", "{A}原来办卡的那家健身房怎么了？", "关门/跑路了", "new"))
_also("zh_hotel", ask("single", "{A}的婚宴原来订在哪个酒店？", "{hotels[0]}", "old"))
_also("zh_flight", ask("single", "{A}是从哪儿飞回来？", "{flight[0]}", "land"))
_also("zh_doctor", ask("single", "医生说{A}哪里不好？", "胃", "one"))
_also("zh_party", ask("single", "聚餐的包间叫什么？", "{restaurant[1]}", "where"))
_also("zh_trip", ask("single", "那次出游订了几间房？", "两间", "when"))
_also("zh_hometown", ask("single", "{A}回老家坐高铁要多久？", "四个小时", "town"))
_also("zh_bp", ask("single", "{A}体检查出什么问题？", "血压偏高", "doctor"))
_also("zh_phone", ask("single", "{A}换手机之前用的什么？", "{phones[0]}", "old"))
